"""The `routing explain` and `routing replay` verbs: argument checks, then the pure functions."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from gpucluster import exit_codes, names
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import ClusterFileError, Finding
from gpucluster.routing.config import RoutingConfig, from_cluster
from gpucluster.routing.config import load as load_rendered
from gpucluster.routing.controller import Commands, read_queue, read_spend
from gpucluster.routing.explain import NotQueuedError, explain
from gpucluster.routing.history import HistoryError, parse_history
from gpucluster.routing.replay import replay
from gpucluster.routing.squeue import SqueueError, parse_text
from gpucluster.routing.summary import as_json, as_text, summarize
from gpucluster.text_input import UnreadableInputError, read_text


def routing_config(path: str) -> RoutingConfig:
    """The routing configuration of a cluster file; ClusterFileError (exit 2) when it has no routing."""
    cluster = load_cluster_file(path).cluster
    if cluster.routing is None:
        hint = "add a routing section (docs/routing.md) or name a cluster file that has one"
        raise ClusterFileError(
            [Finding(("routing",), "the cluster file has no routing section", hint).located(path, 1)]
        )
    return from_cluster(cluster)


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a sacct history through the routing policy: cloud GPU-hours, cost per route, waits."""
    config = routing_config(args.file)
    try:
        jobs = parse_history(read_text(args.sacct), args.sacct)
    except (HistoryError, UnreadableInputError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    summary = summarize(config, replay(config, jobs))
    print(as_json(summary) if args.format == "json" else as_text(summary, args.sacct))
    return exit_codes.OK


def rendered_config(path: str) -> RoutingConfig | None:
    """The controller's routing.json (what the burst controller reads); None after printing why it cannot."""
    try:
        return load_rendered(Path(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        hint = "name the routing.json the controller's role wrote, or the cluster file with --file"
        print(f"{path}: not a routing configuration ({exc}); {hint}", file=sys.stderr)
        return None


def cmd_explain(args: argparse.Namespace) -> int:
    """Why a job is where it is: its class, its route and the burst controller's decision now."""
    config = rendered_config(args.config) if args.config else routing_config(args.file)
    if config is None:
        return exit_codes.BAD_INPUT
    now = time.time()
    try:
        if args.squeue_output:
            jobs, spend = parse_text(read_text(args.squeue_output), args.squeue_output), {}
        else:
            commands = Commands(squeue=args.squeue, sacct=args.sacct)
            jobs, spend = read_queue(commands), read_spend(config, commands, now)
        lines = explain(config, args.job, jobs, spend, now)
    except (HistoryError, SqueueError, UnreadableInputError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    except NotQueuedError:
        print(
            f"job {args.job} is not in the queue; a finished job is in `sacct -j {args.job}`", file=sys.stderr
        )
        return exit_codes.BAD_INPUT
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"cannot read the queue: {exc}; run on the controller or pass --squeue-output", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print("\n".join(lines))
    return exit_codes.OK


def add_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser], default_file: str) -> None:
    """Register `routing explain` and `routing replay` on the main parser."""
    routing = verbs.add_parser(
        "routing", help="hybrid routing: `explain` a job's place, `replay` a sacct history through the policy"
    )
    sub = routing.add_subparsers(dest="routing_verb", required=True)
    explain_parser = sub.add_parser("explain", help=(cmd_explain.__doc__ or "").splitlines()[0])
    explain_parser.add_argument("job", help="Slurm job id")
    explain_parser.add_argument("--squeue-output", metavar="FILE", help="saved `squeue -o FORMAT` text, or -")
    explain_parser.add_argument("--squeue", default="squeue", help="squeue to run (default: on PATH)")
    explain_parser.add_argument("--sacct", default="sacct", help="sacct to run (default: on PATH)")
    explain_parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"on the controller: its routing configuration ({names.ROUTING_CONFIG}) instead of --file",
    )
    explain_parser.set_defaults(func=cmd_explain)
    replay_parser = sub.add_parser("replay", help=(cmd_replay.__doc__ or "").splitlines()[0])
    replay_parser.add_argument(
        "--sacct", required=True, metavar="FILE", help="sacct --parsable2 output, or -"
    )
    replay_parser.add_argument("--format", choices=("table", "json"), default="table")
    replay_parser.set_defaults(func=cmd_replay)
    for parser in (explain_parser, replay_parser):
        parser.add_argument("--file", default=default_file, help=f"cluster file (default {default_file})")
