"""A cost report as a text table, Markdown or JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from gpucluster.cost.analysis import CostReport
from gpucluster.cost.checkpoint import CheckpointPlan

Row = Sequence[str]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _usd(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:,.2f}"


def _duration(seconds: float) -> str:
    if math.isinf(seconds):
        return "∞"
    if seconds >= 7200:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 60:.1f} min"


def cost_rows(report: CostReport) -> list[Row]:
    """Market rows: market, instance, list $/GPU-h, effective $/GPU-h at u, break-even with on-prem."""
    rows: list[Row] = []
    if report.onprem and report.onprem_curve:
        full = report.onprem_curve.at(1.0)
        effective = report.onprem_curve.at(report.utilization)
        rows.append(("on-prem (owned)", f"{report.onprem.gpu_count} GPUs", _usd(full), _usd(effective), "—"))
    for market in report.markets:
        rows.append(
            (
                market.price.label,
                market.price.instance_type,
                _usd(market.price.usd_per_gpu_hour),
                _usd(market.usd_per_gpu_hour),
                _pct(market.break_even_utilization),
            )
        )
    return rows


def spot_line(plan: CheckpointPlan) -> str:
    """Checkpoint interval and overhead in one sentence."""
    return (
        f"τ = {_duration(plan.interval_s)} ({plan.method}), "
        f"checkpoint write C = {plan.checkpoint_write_s:g} s, "
        f"job MTBF M = {_duration(plan.mtbf_s)}, lost work per interruption τ/2 + restart = "
        f"{_duration(plan.lost_work_per_interruption_s)}, checkpoint overhead C/τ = "
        f"{plan.checkpoint_overhead_fraction:.1%}, total overhead {plan.total_overhead_fraction:.1%}"
    )


def _table(header: Row, rows: Sequence[Row]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    return [line.rstrip() for line in lines]


_COST_HEADER = ("market", "capacity", "list $/GPU-h", "effective $/GPU-h", "break-even u")
_MONTH_HEADER = ("group", "site", "market", "GPUs", "$/month")
_INPUT_HEADER = ("input", "value", "source")


def _month_rows(report: CostReport) -> list[Row]:
    rows: list[Row] = [(g.name, g.site, g.market, str(g.gpus), _usd(g.usd)) for g in report.monthly]
    rows.append(("total", "", "", str(sum(g.gpus for g in report.monthly)), _usd(report.monthly_total_usd)))
    return rows


def as_table(report: CostReport) -> str:
    """Plain text for a terminal."""
    lines = [
        f"Cost of {report.cluster} at {report.utilization:.0%} utilization ({report.utilization_source})",
        "",
    ]
    lines += ["Effective $ per used GPU-hour:", *_table(_COST_HEADER, cost_rows(report)), ""]
    if report.spot:
        lines += ["Spot checkpointing: " + spot_line(report.spot), ""]
    lines += [f"Monthly total at {report.utilization:.0%}:", *_table(_MONTH_HEADER, _month_rows(report)), ""]
    if report.recommendation:
        lines += ["Recommendation: " + report.recommendation.text, ""]
    inputs = [(i.name, i.value, i.source) for i in report.inputs]
    lines += ["Inputs:", *_table(_INPUT_HEADER, inputs), ""]
    lines += ["Notes:", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines)


def _md_table(header: Row, rows: Sequence[Row]) -> list[str]:
    def line(cells: Row) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(row) for row in rows)]


def as_markdown(report: CostReport) -> str:
    """Markdown for a pull request or a review."""
    lines = [f"### Cost of `{report.cluster}` at {report.utilization:.0%} utilization", ""]
    lines += [f"Utilization from {report.utilization_source}.", ""]
    lines += [*_md_table(_COST_HEADER, cost_rows(report)), ""]
    if report.recommendation:
        lines += [f"**Recommendation:** {report.recommendation.text}", ""]
    if report.spot:
        lines += [f"**Spot checkpointing:** {spot_line(report.spot)}", ""]
    lines += [
        f"**Monthly total at {report.utilization:.0%}:**",
        "",
        *_md_table(_MONTH_HEADER, _month_rows(report)),
        "",
    ]
    inputs = [(i.name, i.value, i.source) for i in report.inputs]
    lines += ["<details><summary>Inputs and sources</summary>", "", *_md_table(_INPUT_HEADER, inputs), ""]
    lines += ["</details>", "", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines)


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def as_dict(report: CostReport) -> dict[str, object]:
    """The report as JSON-ready values (infinities become null)."""
    onprem = report.onprem_curve
    data: dict[str, object] = {
        "cluster": report.cluster,
        "utilization": report.utilization,
        "utilization_source": report.utilization_source,
        "instance_type": report.instance_type,
        "onprem_usd_per_gpu_hour": onprem.at(report.utilization) if onprem else None,
        "onprem_monthly_usd": report.onprem.total_usd(report.utilization) if report.onprem else None,
        "markets": [
            {
                "market": m.price.market,
                "instance_type": m.price.instance_type,
                "list_usd_per_gpu_hour": m.price.usd_per_gpu_hour,
                "effective_usd_per_gpu_hour": m.usd_per_gpu_hour,
                "overhead_fraction": m.overhead_fraction,
                "break_even_utilization": m.break_even_utilization,
                "source": m.price.source,
            }
            for m in report.markets
        ],
        "spot_checkpoint": vars(report.spot) if report.spot else None,
        "monthly": [vars(g) for g in report.monthly],
        "monthly_total_usd": report.monthly_total_usd,
        "recommendation": vars(report.recommendation) if report.recommendation else None,
        "inputs": [vars(i) for i in report.inputs],
        "notes": report.notes,
    }
    result = _finite(data)
    assert isinstance(result, dict)
    return result


def as_json(report: CostReport) -> str:
    """JSON text of as_dict."""
    return json.dumps(as_dict(report), indent=2)
