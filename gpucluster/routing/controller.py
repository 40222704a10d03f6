"""The burst controller: one pass per run of its systemd timer (`python -m gpucluster.routing.controller`).

It reads the queue (`squeue --start` for pending jobs and their expected rack starts, `squeue` for running
ones, or one `squeue --json`), this month's cloud spend (`sacct`, only when a class has a budget share),
decides (gpucluster.routing.decide) and widens with `scontrol update jobid=<id> partition=<rack>,<cloud>`.
Every decision is one line on stdout (the journal: `journalctl -u gpucluster-routing`). It keeps no state
between passes: a controller restart loses nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gpucluster.routing import config as routing_config
from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.decide import Decision, decide
from gpucluster.routing.history import COLUMNS, parse_history
from gpucluster.routing.history import month_spend_by_class as spend_by_class
from gpucluster.routing.squeue import PENDING_COMMAND, RUNNING_COMMAND, QueuedJob, parse_json, parse_text


@dataclass(frozen=True)
class Commands:
    """The Slurm clients a pass runs (names or paths; tests put stand-ins here)."""

    squeue: str = "squeue"
    scontrol: str = "scontrol"
    sacct: str = "sacct"
    use_json: bool = False


def _run(argv: Sequence[str]) -> str:
    # ISO times whatever the caller's environment says: the parsers read 2026-11-02T10:00:00.
    env = {**os.environ, "SLURM_TIME_FORMAT": "standard"}
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, env=env).stdout


def read_queue(commands: Commands) -> list[QueuedJob]:
    """Pending jobs with their expected starts, and running ones."""
    if commands.use_json:
        return parse_json(_run([commands.squeue, "--json"]))
    pending = parse_text(_run([commands.squeue, *PENDING_COMMAND]), "squeue --start")
    running = parse_text(_run([commands.squeue, *RUNNING_COMMAND]), "squeue --states=RUNNING")
    return pending + running


def month_start(now: float) -> float:
    """The first second of this local month."""
    return datetime.fromtimestamp(now).replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def read_spend(config: RoutingConfig, commands: Commands, now: float) -> dict[str, float]:
    """Each class's cloud spend this month; empty when no class has a budget share (no sacct call)."""
    if all(c.budget_usd_per_month is None for c in config.classes):
        return {}
    since = month_start(now)
    stamp = datetime.fromtimestamp(since).strftime("%Y-%m-%dT%H:%M:%S")
    partitions = ",".join(config.prices)
    argv = [commands.sacct, "--allusers", "--allocations", "--parsable2", "-S", stamp, "-E", "now"]
    text = _run([*argv, f"--partition={partitions}", "-o", COLUMNS])
    return spend_by_class(config, parse_history(text, "sacct"), since)


def run_pass(config: RoutingConfig, commands: Commands, now: float) -> list[Decision]:
    """Read, decide, widen; returns the decisions (their lines are printed as they are made)."""
    decisions = decide(config, read_queue(commands), read_spend(config, commands, now), now)
    target = f"{config.rack_partition},{config.cloud_partition}"
    for decision in decisions:
        line = decision.line()
        if decision.action == "widen":
            try:
                _run([commands.scontrol, "update", f"jobid={decision.job_id}", f"partition={target}"])
            except subprocess.CalledProcessError as exc:  # it may have started or ended meanwhile
                line += f" (scontrol failed: {(exc.stderr or '').strip() or exc.returncode})"
        print(line, flush=True)
    return decisions


def main(argv: Sequence[str] | None = None) -> int:
    """One pass; exit 1 with one line when Slurm or the configuration cannot be read."""
    parser = argparse.ArgumentParser(prog="gpucluster-routing", description=__doc__)
    parser.add_argument("--config", type=Path, default=routing_config.DEFAULT_PATH)
    parser.add_argument("--json", action="store_true", help="read the queue with one `squeue --json`")
    parser.add_argument("--squeue", default="squeue")
    parser.add_argument("--scontrol", default="scontrol")
    parser.add_argument("--sacct", default="sacct")
    args = parser.parse_args(argv)
    commands = Commands(args.squeue, args.scontrol, args.sacct, args.json)
    try:
        config = routing_config.load(args.config)
        decisions = run_pass(config, commands, time.time())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"gpucluster-routing: {args.config}: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"gpucluster-routing: {' '.join(exc.cmd)}: {(exc.stderr or '').strip()}", file=sys.stderr)
        return 1
    widened = sum(1 for d in decisions if d.action == "widen")
    print(f"pass: {len(decisions)} waiting rack_then_cloud job(s), {widened} widened", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
