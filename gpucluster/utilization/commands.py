"""`gpucluster utilization --prometheus URL [--save FILE] | --export FILE`, and cost's measured figure."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpucluster import exit_codes
from gpucluster.clusterfile.model import Cluster
from gpucluster.text_input import UnreadableInputError, read_text
from gpucluster.utilization.measure import Measurement, measure
from gpucluster.utilization.prometheus import DEFAULT_STEP_S, PrometheusError, fetch_answers
from gpucluster.utilization.report import as_json, as_table, decide, origin
from gpucluster.utilization.series import (
    ENGINE_ACTIVE,
    ExportError,
    export_document,
    parse_matrix,
    read_export,
)

DEFAULT_DAYS = 28
SECONDS_PER_DAY = 86400

Clock = Callable[[], float]


def window(days: int, step_s: float, now: Clock | None = None) -> tuple[float, float]:
    """The last `days` whole steps up to now: [end - days, end), end on a step boundary."""
    end = (now or time.time)() // step_s * step_s
    return end - days * SECONDS_PER_DAY, end


def measured(args: argparse.Namespace, now: Clock | None = None) -> tuple[Measurement, str]:
    """The measurement of --prometheus (the last --days, saved to --save) or --export (clipped to --days)."""
    step = args.step_s or DEFAULT_STEP_S
    if args.prometheus:
        start, end = window(args.days or DEFAULT_DAYS, step, now)
        answers = fetch_answers(args.prometheus, start, end, step)
        if args.save:
            _save(export_document(args.prometheus, ENGINE_ACTIVE, (start, end), step, answers), args.save)
        series = [s for answer in answers for s in parse_matrix(answer, args.prometheus)]
        return measure(series, start, end, step), f"Prometheus {args.prometheus}"
    saved = read_export(read_text(args.export), args.export)
    start = saved.start_s if not args.days else max(saved.start_s, saved.end_s - args.days * SECONDS_PER_DAY)
    return measure(saved.series, start, saved.end_s, saved.step_s), f"export {args.export}"


def _save(document: dict[str, object], path: str) -> None:
    """Write the export beside the measurement, whole or not at all (temp file, then rename)."""
    target = Path(path)
    try:
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=target.parent or Path("."), prefix=f".{target.name}.", delete=False
        ) as out:
            json.dump(document, out)
        os.replace(out.name, target)
    except OSError as exc:
        raise ExportError(f"--save {path}: cannot write: {exc.strerror or exc}") from None
    print(f"export saved to {path} (read it again with --export {path})", file=sys.stderr)


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
    source.add_argument("--export", metavar="FILE", help="an export saved by --prometheus URL --save FILE")
    sub.add_argument(
        "--days", type=_days, help=f"window: the last N days (default {DEFAULT_DAYS} with --prometheus)"
    )
    sub.add_argument("--step-s", type=_step, help=f"seconds between points (default {DEFAULT_STEP_S})")
    sub.add_argument("--plot", metavar="FILE.png", help="draw daily active vs allocated GPU-hours per site")
    sub.add_argument(
        "--save", metavar="FILE", help="with --prometheus: also save what was fetched, for --export later"
    )


def _whole(unit: str, low: int, high: int, hint: str) -> Callable[[str], int]:
    """Argparse type: a whole number of `unit` from low to high, the hint saying why."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {unit}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text}: give {low} to {high} {unit} ({hint})")
        return value

    return parse


_days = _whole("days", 1, 3650, "the guides measure 14 to 28")
_step = _whole("seconds", 1, 3600, "at least the scrape interval")
