"""Routing: the burst controller's pass with 10,000 pending jobs, and the replay of a 100,000-job month.

Prints figures and their ratio to the targets of issue 33 (no pass/fail):
- a pass (squeue text parsed, decisions made) with 10,000 pending and 2,000 running jobs: target < 1 s;
  also the whole `gpucluster-routing` process against stand-in squeue/scontrol/sacct programs that
  print the same queue (interpreter start, imports, two squeue runs, one sacct run, the widenings);
- `routing replay` of a month of 100,000 jobs (sacct text parsed, replayed, summed): target < 10 s.
Medians of RUNS runs. The jobs come from tools/routing_history.py (seeded), on the example's routing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpucluster.clusterfile import load  # noqa: E402
from gpucluster.routing.config import RoutingConfig, from_cluster  # noqa: E402
from gpucluster.routing.decide import decide  # noqa: E402
from gpucluster.routing.history import COLUMNS, parse_history  # noqa: E402
from gpucluster.routing.replay import replay  # noqa: E402
from gpucluster.routing.squeue import parse_text  # noqa: E402
from gpucluster.routing.summary import summarize  # noqa: E402
from tools.routing_history import generate  # noqa: E402

RUNS = 5
NOW = datetime(2026, 11, 15, 12, 0)
ACCOUNTS = ("research", "research", "research", "training", "evals")


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def queue_text(pending: int, running: int) -> tuple[str, str]:
    """squeue -o FORMAT text: pending jobs submitted over the last day, planned (or not) for the next."""
    pending_lines = []
    for n in range(pending):
        submit = NOW - timedelta(seconds=(n * 86400) // pending)
        start = "N/A" if n % 7 == 0 else _stamp(NOW + timedelta(seconds=(n * 37) % 30000))
        account = ACCOUNTS[n % len(ACCOUNTS)]
        fields = [
            str(200000 + n),
            "PENDING",
            "rack",
            account,
            "normal",
            _stamp(submit),
            start,
            str(1 + n % 2),
        ]
        pending_lines.append("|".join([*fields, "Resources", ""]))
    began, started = _stamp(NOW - timedelta(hours=2)), _stamp(NOW - timedelta(hours=1))
    # Two experiments already hold 2 of the 4 cloud nodes the example allows them.
    running_lines = [
        f"{100000 + n}|RUNNING|{'od' if n < 2 else 'rack'}|research|normal|{began}|{started}|1|None|"
        for n in range(running)
    ]
    return "\n".join(pending_lines) + "\n", "\n".join(running_lines) + "\n"


def median_s(run: Callable[[], object], runs: int = RUNS) -> float:
    """Median wall time of `runs` calls."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def pass_in_process(config: RoutingConfig, pending: str, running: str) -> tuple[float, float, int]:
    """Median seconds of decide() alone and of parse + decide, and the widenings of one pass."""
    jobs = parse_text(pending) + parse_text(running)
    now = NOW.timestamp()
    decide_s = median_s(lambda: decide(config, jobs, {}, now))
    full_s = median_s(lambda: decide(config, parse_text(pending) + parse_text(running), {}, now))
    widened = sum(1 for d in decide(config, jobs, {}, now) if d.action == "widen")
    return decide_s, full_s, widened


def _program(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def pass_as_process(config: RoutingConfig, pending: str, running: str) -> float:
    """Median seconds of the whole controller process against stand-in Slurm programs."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pending").write_text(pending)
        (work / "running").write_text(running)
        (work / "routing.json").write_text(config.to_json())
        answer = f'case "$*" in *--start*) cat {work}/pending ;; *) cat {work}/running ;; esac\n'
        squeue = _program(work / "squeue", answer)
        sacct = _program(work / "sacct", f'echo "{COLUMNS.replace(",", "|")}"\n')
        scontrol = _program(work / "scontrol", "exit 0\n")
        argv = [sys.executable, "-m", "gpucluster.routing.controller", "--config", str(work / "routing.json"),
                "--squeue", squeue, "--sacct", sacct, "--scontrol", scontrol]  # fmt: skip
        return median_s(lambda: subprocess.run(argv, check=True, capture_output=True, cwd=ROOT), runs=3)


def replay_month(config: RoutingConfig, jobs: int) -> tuple[float, float, int]:
    """Median seconds to parse and to parse+replay+sum a month of `jobs` jobs; its cloud GPU-hours."""
    text = generate(jobs, 30.0, rack_nodes=max(8, jobs * 8 // 900))
    parse_s = median_s(lambda: parse_history(text), runs=3)
    total_s = median_s(lambda: summarize(config, replay(config, parse_history(text))), runs=3)
    summary = summarize(config, replay(config, parse_history(text)))
    return parse_s, total_s, round(summary.cloud_gpu_hours)


def main() -> None:
    """Print the figures."""
    config = from_cluster(load(ROOT / "clusters" / "example.yaml").cluster)
    pending, running = queue_text(10_000, 2_000)
    decide_s, full_s, widened = pass_in_process(config, pending, running)
    print(f"pass, 10,000 pending + 2,000 running: decide {decide_s:.3f} s, parse + decide {full_s:.3f} s"
          f" ({widened} widened); target < 1 s: ratio {full_s / 1.0:.2f}")  # fmt: skip
    process_s = pass_as_process(config, pending, running)
    print(f"pass as a process (gpucluster-routing, stand-in Slurm programs): {process_s:.3f} s;"
          f" ratio {process_s:.2f}")  # fmt: skip
    parse_s, total_s, gpu_hours = replay_month(config, 100_000)
    print(f"replay, 100,000 jobs in a month: parse {parse_s:.2f} s, parse + replay + sum {total_s:.2f} s"
          f" ({gpu_hours:,} cloud GPU-h); target < 10 s: ratio {total_s / 10.0:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
