"""Prometheus range-query answers (`/api/v1/query_range`, resultType matrix) as typed series.

The saved export (`gpucluster utilization --prometheus URL --save FILE`) is these answers as Prometheus
returned them, wrapped with the window they cover:

    {"format": "gpucluster-utilization-export/v1", "prometheus": URL, "query": QUERY,
     "start": UNIX_S, "end": UNIX_S, "step_s": S, "answers": [<query_range answer>, ...]}

Each answer is `{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...},
"values": [[UNIX_S, "VALUE"], ...]}, ...]}}`, one per chunk of the window.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# Ratio of time the graphics engine was active over the exporter's sample period, 0..1 per GPU
# (dcgm-exporter etc/default-counters.csv: "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge").
ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
EXPORT_FORMAT = "gpucluster-utilization-export/v1"


class ExportError(ValueError):
    """A range-query answer or export that cannot be read; names the source, the field and a hint."""


@dataclass(frozen=True)
class Series:
    """One labelled series: its label set and its (unix seconds, value) points in time order."""

    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Export:
    """A saved export: the window, the step and the series of every answer."""

    source: str
    prometheus: str
    start_s: float
    end_s: float
    step_s: float
    series: list[Series]


def parse_matrix(answer: Any, source: str, where: str = "") -> list[Series]:
    """The series of one query_range answer; an error answer or another result type is an ExportError."""
    at = f"{source}: {where}" if where else f"{source}: "
    if not isinstance(answer, dict) or answer.get("status") != "success":
        status = answer.get("status") if isinstance(answer, dict) else type(answer).__name__
        error = answer.get("error", "") if isinstance(answer, dict) else ""
        raise ExportError(f"{at}status: {status!r} {error}; expected a successful query_range answer")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise ExportError(f"{at}data.resultType: {kind!r}; use /api/v1/query_range (a matrix), not /query")
    result = data.get("result")
    if not isinstance(result, list):
        raise ExportError(f"{at}data.result: not a list")
    return [_series(item, f"{at}data.result[{i}]") for i, item in enumerate(result)]


def _series(item: Any, at: str) -> Series:
    if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
        raise ExportError(f"{at}.metric: missing; each result needs metric and values")
    values = item.get("values")
    if not isinstance(values, list):
        raise ExportError(f"{at}.values: missing; each result needs metric and values")
    points = []
    for j, pair in enumerate(values):
        try:
            t, v = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            raise ExportError(f'{at}.values[{j}]: {pair!r} is not [unix_seconds, "value"]') from None
        if math.isfinite(t) and math.isfinite(v):  # NaN means no usable sample: treated as missing
            points.append((t, v))
    return Series({str(k): str(v) for k, v in item["metric"].items()}, tuple(points))


def read_export(text: str, source: str) -> Export:
    """A saved export from its JSON text (see the module docstring for the format)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(
            f"{source}:{exc.lineno}: not JSON ({exc.msg});"
            " save one with `gpucluster utilization --prometheus URL --save FILE`"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise ExportError(
            f"{source}: format: {found!r}; expected {EXPORT_FORMAT!r} from `gpucluster utilization --save`"
        )
    try:
        start, end, step = float(doc["start"]), float(doc["end"]), float(doc["step_s"])
    except (KeyError, TypeError, ValueError):
        raise ExportError(f"{source}: start, end, step_s: missing or not numbers; export it again") from None
    if not 0 < step <= end - start:
        raise ExportError(
            f"{source}: step_s: {step:g} must be above 0 and within end - start ({end - start:g})"
        )
    answers = doc.get("answers")
    if not isinstance(answers, list):
        raise ExportError(f"{source}: answers: missing; a list of query_range answers")
    series = [s for i, a in enumerate(answers) for s in parse_matrix(a, source, f"answers[{i}].")]
    return Export(source, str(doc.get("prometheus", "")), start, end, step, series)


def export_document(
    prometheus: str, query: str, window: tuple[float, float], step_s: float, answers: list[Any]
) -> dict[str, Any]:
    """The export's JSON document for answers fetched over the window [start, end) at step_s."""
    return {
        "format": EXPORT_FORMAT,
        "prometheus": prometheus,
        "query": query,
        "start": window[0],
        "end": window[1],
        "step_s": step_s,
        "answers": answers,
    }
