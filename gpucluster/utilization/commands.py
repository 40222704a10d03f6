"""`gpucluster utilization --prometheus URL | --export FILE`, `utilization export`, cost's measured u."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from gpucluster import exit_codes
from gpucluster.clusterfile.model import Cluster
from gpucluster.text_input import UnreadableInputError, read_text
from gpucluster.utilization.measure import Measurement, measure
from gpucluster.utilization.prometheus import DEFAULT_STEP_S, PrometheusError, fetch_answers, fetch_series
from gpucluster.utilization.report import as_json, as_table, decide, origin
from gpucluster.utilization.series import ENGINE_ACTIVE, ExportError, export_document, read_export

DEFAULT_DAYS = 28
SECONDS_PER_DAY = 86400

Clock = Callable[[], float]


def window(days: int, step_s: float, now: Clock | None = None) -> tuple[float, float]:
    """The last `days` whole steps up to now: [end - days, end), end on a step boundary."""
    end = (now or time.time)() // step_s * step_s
    return end - days * SECONDS_PER_DAY, end


def measured(args: argparse.Namespace, now: Clock | None = None) -> tuple[Measurement, str]:
    """The measurement of --prometheus (the last --days) or --export (clipped to the last --days if given)."""
    step = args.step_s or DEFAULT_STEP_S
    if args.prometheus:
        start, end = window(args.days or DEFAULT_DAYS, step, now)
        return measure(
            fetch_series(args.prometheus, start, end, step), start, end, step
        ), f"Prometheus {args.prometheus}"
    saved = read_export(read_text(args.export), args.export)
    start = saved.start_s if not args.days else max(saved.start_s, saved.end_s - args.days * SECONDS_PER_DAY)
    return measure(saved.series, start, saved.end_s, saved.step_s), f"export {args.export}"


def cmd_measured(cluster: Cluster, args: argparse.Namespace) -> int:
    """Print the measured figures (table or JSON), and draw the daily plot when asked."""
    try:
        measurement, source = measured(args)
    except (ExportError, PrometheusError, UnreadableInputError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    if not measurement.groups:
        where = args.prometheus or args.export
        print(
            f"{where}: no {ENGINE_ACTIVE} samples in the window; are the dcgm exporters scraped?",
            file=sys.stderr,
        )
        return exit_codes.BAD_INPUT
    print((as_json if args.format == "json" else as_table)(cluster, measurement, source))
    return _plot(measurement, cluster.name, args.plot) if args.plot else exit_codes.OK


def _plot(measurement: Measurement, name: str, path: str) -> int:
    from gpucluster.utilization.plot import write_plot  # noqa: PLC0415 - matplotlib only when asked

    try:
        written = write_plot(measurement, name, path)
    except ImportError:
        print("--plot needs matplotlib: pip install -r requirements.txt", file=sys.stderr)
        return exit_codes.BAD_INPUT
    except OSError as exc:
        print(f"--plot {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(f"plot written to {written}", file=sys.stderr)
    return exit_codes.OK


def cmd_export(args: argparse.Namespace, now: Clock | None = None) -> int:
    """Save the last --days of engine-active series from --prometheus into --out (JSON)."""
    if not args.prometheus or not args.out:
        print("utilization export needs --prometheus URL and --out FILE", file=sys.stderr)
        return exit_codes.BAD_INPUT
    step = args.step_s or DEFAULT_STEP_S
    start, end = window(args.days or DEFAULT_DAYS, step, now)
    try:
        answers = fetch_answers(args.prometheus, start, end, step)
    except (ExportError, PrometheusError) as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    document = export_document(args.prometheus, ENGINE_ACTIVE, (start, end), step, answers)
    try:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(document, out)
    except OSError as exc:
        print(f"--out {args.out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(
        f"{len(answers)} answer(s), {(end - start) / SECONDS_PER_DAY:g} d at {step:g} s: {args.out}",
        file=sys.stderr,
    )
    return exit_codes.OK


def export_utilization(cluster: Cluster, path: str) -> tuple[float, str]:
    """The deciding figure of a saved export and the origin line naming it (for `gpucluster cost`)."""
    saved = read_export(read_text(path), path)
    measurement = measure(saved.series, saved.start_s, saved.end_s, saved.step_s)
    decision = decide(cluster, measurement)
    if decision.utilization <= 0:
        raise ExportError(f"{path}: no engine activity in the window; is it the right export?")
    return decision.utilization, origin(f"export {path}", measurement, decision)


def add_options(sub: argparse.ArgumentParser, source: argparse._MutuallyExclusiveGroup) -> None:
    """The measured sources (into the verb's group of sources) and their options."""
    source.add_argument("--prometheus", metavar="URL", help="Prometheus to ask, e.g. http://head01:9090")
    source.add_argument("--export", metavar="FILE", help="a saved export (`gpucluster utilization export`)")
    sub.add_argument(
        "--days", type=_days, help=f"window: the last N days (default {DEFAULT_DAYS} with --prometheus)"
    )
    sub.add_argument("--step-s", type=_step, help=f"seconds between points (default {DEFAULT_STEP_S})")
    sub.add_argument("--plot", metavar="FILE.png", help="draw daily active vs allocated GPU-hours per site")
    sub.add_argument("--out", metavar="FILE", help="`utilization export` only: the JSON file to write")


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if not 1 <= value <= 3650:
        raise argparse.ArgumentTypeError(f"{text}: give 1 to 3650 days (the guides measure 14 to 28)")
    return value


def _step(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text}: give 1 to 3600 seconds (at least the scrape interval)")
    return value
