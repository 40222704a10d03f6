"""The `cost`, `checkpoint-interval` and `utilization` verbs: argument checks, then the pure functions."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime

from gpucluster import exit_codes
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import Cluster, node_groups
from gpucluster.cost.analysis import CostReport, build_report
from gpucluster.cost.checkpoint import CheckpointPlan, plan, write_time_s
from gpucluster.cost.inputs import DEFAULT_RESTART_S, CostInputError, spot_plan
from gpucluster.cost.report import as_json, as_markdown, as_table, spot_line
from gpucluster.cost.routed import with_routing
from gpucluster.cost.utilization import (
    SacctError,
    overall_utilization,
    parse_sacct,
    partition_gpus,
    utilization_by_partition,
    window_of,
)
from gpucluster.routing.config import from_cluster as routing_config
from gpucluster.routing.history import SACCT_COMMAND as SACCT_ROUTING
from gpucluster.routing.history import HistoryError, parse_history
from gpucluster.routing.replay import replay
from gpucluster.routing.summary import summarize
from gpucluster.text_input import UnreadableInputError, read_text
from gpucluster.utilization import commands as measured
from gpucluster.utilization.series import ExportError


def fraction(text: str) -> float:
    """Argparse type: a utilization as 0.6 or 60%, above 0 and at most 1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; write 0.6 or 60%") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 1]; write 0.6 or 60% for sixty percent")
    return value


def positive(text: str) -> float:
    """Argparse type: a finite number above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be above 0")
    return value


def local_time(text: str) -> datetime:
    """Argparse type: an ISO time without zone, as sacct prints it (2026-11-01T00:00:00)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO time such as 2026-11-01T00:00:00") from None
    if value.tzinfo is not None:
        raise argparse.ArgumentTypeError(f"{text!r}: drop the zone; sacct prints the cluster's local time")
    return value


def _sacct_utilization(cluster: Cluster, path: str) -> tuple[float, str]:
    jobs = parse_sacct(read_text(path), path)
    if not jobs:
        raise SacctError(
            f"{path}: no GPU allocations found; is AccountingStorageTRES=gres/gpu in slurm.conf?"
        )
    start, end = window_of(jobs)
    gpus = partition_gpus(cluster)
    rows = utilization_by_partition(jobs, gpus, start, end)
    hours = (end - start).total_seconds() / 3600
    total = overall_utilization(rows, _cluster_gpus(cluster), hours)
    if total <= 0:
        raise SacctError(f"{path}: the jobs allocate no GPU-hours in declared partitions")
    return min(total, 1.0), f"sacct {path}, {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}, all partitions"


def _routed(report: CostReport, cluster: Cluster, source: str, history: str) -> CostReport:
    """The report with the cloud rows of the routing policy replayed over a sacct history."""
    if cluster.routing is None:
        raise CostInputError(
            source,
            "routing",
            "--routing-from needs a routing section",
            "add one (docs/routing.md) or drop the flag",
        )
    config = routing_config(cluster)
    summary = summarize(config, replay(config, parse_history(read_text(history), history)))
    if summary.window_hours <= 0:
        raise HistoryError(f"{history}: no started jobs to replay; run `{SACCT_ROUTING}`")
    return with_routing(report, cluster, config, summary, history)


def _cluster_gpus(cluster: Cluster) -> int:
    return sum(g.max_nodes * g.gpu_count for g in node_groups(cluster))


def cmd_cost(args: argparse.Namespace) -> int:
    """Effective $/GPU-hour on-prem vs each AWS market, break-even, monthly total, recommendation."""
    try:
        cluster = load_cluster_file(args.file).cluster
        utilization, origin = args.utilization, "--utilization" if args.utilization else None
        if args.utilization_from:
            utilization, origin = _sacct_utilization(cluster, args.utilization_from)
        if args.utilization_from_export:
            utilization, origin = measured.export_utilization(cluster, args.utilization_from_export)
        report = build_report(cluster, args.file, utilization, origin, "daly" if args.daly else None)
        if args.routing_from:
            report = _routed(report, cluster, args.file, args.routing_from)
    except (CostInputError, SacctError, HistoryError, UnreadableInputError, ExportError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    text = {"json": as_json, "markdown": as_markdown}.get(args.format, as_table)(report)
    print(text)
    if args.plot:
        from gpucluster.cost.plot import write_plot  # noqa: PLC0415 - matplotlib only when asked

        try:
            written = write_plot(report, args.plot)
        except ImportError:
            print("--plot needs matplotlib: pip install -r requirements.txt", file=sys.stderr)
            return exit_codes.BAD_INPUT
        except OSError as exc:
            print(f"--plot {args.plot}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return exit_codes.BAD_INPUT
        print(f"plot written to {written}", file=sys.stderr)
    return exit_codes.OK


def _explicit_plan(args: argparse.Namespace) -> CheckpointPlan | None:
    given = {"--size-gib": args.size_gib, "--write-gib-s": args.write_gib_s, "--mtbf-h": args.mtbf_h}
    if all(value is None for value in given.values()):
        return None
    missing = [name for name, value in given.items() if value is None]
    if missing:
        raise CostInputError("checkpoint-interval", " ".join(missing), "missing", "give all three or none")
    restart_s = DEFAULT_RESTART_S if args.restart_s is None else args.restart_s
    write_s = write_time_s(args.size_gib, args.write_gib_s)
    return plan(write_s, args.mtbf_h * 3600, restart_s, "daly" if args.daly else "young")


def _derived_plan(args: argparse.Namespace) -> CheckpointPlan:
    cluster = load_cluster_file(args.file).cluster
    groups = cluster.aws.capacity if cluster.aws else []
    chosen = (
        [g for g in groups if g.name == args.group]
        if args.group
        else [g for g in groups if g.market == "spot"]
    )
    if not chosen:
        what = f"no capacity group named {args.group!r}" if args.group else "no spot capacity group"
        raise CostInputError(
            args.file, "aws.capacity", what, "pass --group, or --size-gib, --write-gib-s, --mtbf-h"
        )
    result, _ = spot_plan(cluster, chosen[0].instance_type, "daly" if args.daly else None)
    return result


def cmd_checkpoint_interval(args: argparse.Namespace) -> int:
    """Young/Daly checkpoint interval τ and the expected overhead on interruptible capacity."""
    try:
        result = _explicit_plan(args) or _derived_plan(args)
    except CostInputError as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    if args.format == "json":
        print(json.dumps({k: (v if v != float("inf") else None) for k, v in vars(result).items()}, indent=2))
    else:
        print(spot_line(result))
    return exit_codes.OK


def cmd_utilization(args: argparse.Namespace) -> int:
    """GPU utilization: measured by DCGM (--prometheus, --export) or allocated per partition (--sacct)."""
    misplaced = _misplaced(args)
    if misplaced:
        print(misplaced, file=sys.stderr)
        return exit_codes.BAD_INPUT
    if not args.sacct:
        return measured.cmd_measured(load_cluster_file(args.file).cluster, args)
    try:
        cluster = load_cluster_file(args.file).cluster
        jobs = parse_sacct(read_text(args.sacct), args.sacct)
        if not jobs and (args.start is None or args.end is None):
            raise SacctError(f"{args.sacct}: no GPU allocations; is AccountingStorageTRES=gres/gpu set?")
        first, last = window_of(jobs) if jobs else (args.start, args.end)
        start, end = args.start or first, args.end or last
        if end <= start:
            raise SacctError(f"--start {start} must come before --end {end}")
    except (SacctError, UnreadableInputError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    rows = utilization_by_partition(jobs, partition_gpus(cluster), start, end)
    hours = (end - start).total_seconds() / 3600
    overall = overall_utilization(rows, _cluster_gpus(cluster), hours)
    if args.format == "json":
        out = [{"partition": r.partition, **vars(r), "utilization": r.utilization} for r in rows]
        window = {"start": start.isoformat(), "end": end.isoformat(), "hours": hours}
        print(json.dumps({"window": window, "partitions": out, "overall": overall}, indent=2))
        return exit_codes.OK
    print(f"window {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} ({hours:.1f} h), {len(jobs)} GPU job(s)")
    for r in rows:
        print(
            f"  {r.partition:<12} {r.allocated_gpu_hours:>10.1f} of {r.available_gpu_hours:>10.1f} GPU-h"
            f"  {r.utilization:6.1%}"
        )
    print(f"  {'cluster':<12} {overall:>31.1%} of all declared GPUs")
    return exit_codes.OK


def _misplaced(args: argparse.Namespace) -> str | None:
    """Options given with a source they do not apply to."""
    if args.sacct:
        given = [f for f, v in (("--days", args.days), ("--step-s", args.step_s), ("--plot", args.plot)) if v]
        if given:
            what = ", ".join(given)
            return f"{what}: for DCGM measurements (--prometheus, --export); --sacct takes --start and --end"
    elif args.start or args.end:
        return "--start/--end: for --sacct only; DCGM measurements take --days"
    if args.save and not args.prometheus:
        return "--save: saves what --prometheus fetched; give --prometheus URL"
    return None


def add_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser], default_file: str) -> None:
    """Register the three cost verbs on the main parser."""
    for name, func in (
        ("cost", cmd_cost),
        ("checkpoint-interval", cmd_checkpoint_interval),
        ("utilization", cmd_utilization),
    ):
        sub = verbs.add_parser(name, help=(func.__doc__ or "").splitlines()[0])
        sub.add_argument(
            "file", nargs="?", default=default_file, help=f"cluster file (default {default_file})"
        )
        sub.set_defaults(func=func)
        _OPTIONS[name](sub)


def _cost_options(sub: argparse.ArgumentParser) -> None:
    source = sub.add_mutually_exclusive_group()
    source.add_argument("--utilization", type=fraction, help="GPU utilization, 0.6 or 60%%")
    source.add_argument("--utilization-from", metavar="SACCT", help="sacct --parsable2 output file, or -")
    source.add_argument(
        "--utilization-from-export",
        metavar="FILE",
        help="DCGM engine-active in an export saved by `gpucluster utilization --prometheus URL --save FILE`",
    )
    sub.add_argument(
        "--routing-from",
        metavar="SACCT",
        help="price the routing policy's cloud use by replaying this sacct history (see routing replay)",
    )
    sub.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    sub.add_argument("--plot", metavar="FILE.png", help="write $/GPU-hour against utilization as a PNG")
    sub.add_argument("--daly", action="store_true", help="Daly's higher-order checkpoint interval")


def _checkpoint_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--size-gib", type=positive, help="checkpoint size in GiB")
    sub.add_argument("--write-gib-s", type=positive, help="checkpoint write bandwidth in GiB/s")
    sub.add_argument("--mtbf-h", type=positive, help="mean time between interruptions of the job, hours")
    sub.add_argument(
        "--restart-s", type=positive, help=f"restart time in seconds (default {DEFAULT_RESTART_S})"
    )
    sub.add_argument(
        "--group", help="capacity group to derive the inputs from (default: the first spot group)"
    )
    sub.add_argument("--daly", action="store_true", help="Daly's higher-order interval instead of Young's")
    sub.add_argument("--format", choices=("table", "json"), default="table")


def _utilization_options(sub: argparse.ArgumentParser) -> None:
    sub.usage = (
        "gpucluster utilization [file] (--prometheus URL [--save FILE] | --export FILE | --sacct FILE)"
        " [options]"
    )
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--sacct", metavar="FILE", help="sacct --parsable2 output, or - for stdin (allocation only)"
    )
    measured.add_options(sub, source)
    sub.add_argument("--start", type=local_time, help="window start (default: first job start)")
    sub.add_argument("--end", type=local_time, help="window end (default: last job end)")
    sub.add_argument("--format", choices=("table", "json"), default="table")


_OPTIONS = {
    "cost": _cost_options,
    "checkpoint-interval": _checkpoint_options,
    "utilization": _utilization_options,
}
