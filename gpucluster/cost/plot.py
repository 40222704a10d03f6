"""$/GPU-hour against utilization for on-prem and each AWS market, break-evens marked (matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpucluster.cost.analysis import CostReport, MarketResult
from gpucluster.cost.formulas import Curve

if TYPE_CHECKING:
    from matplotlib.axes import Axes

SAMPLES = 200
LOWEST_UTILIZATION = 0.05  # below this, committed curves run off to infinity and flatten the rest


def curve_points(curve: Curve) -> tuple[list[float], list[float]]:
    """Utilization in percent and $/GPU-hour along a curve, from 5% to 100%."""
    us = [LOWEST_UTILIZATION + (1 - LOWEST_UTILIZATION) * i / (SAMPLES - 1) for i in range(SAMPLES)]
    return [u * 100 for u in us], [curve.at(u) for u in us]


def write_plot(report: CostReport, path: str | Path) -> Path:
    """Draw the curves and write a PNG; needs matplotlib (imported here so nothing else does)."""
    import matplotlib  # noqa: PLC0415 - optional dependency, only `cost --plot` needs it

    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: PLC0415 - after the headless backend is chosen

    figure, axes = pyplot.subplots(figsize=(10, 6), dpi=120)
    ceiling = 0.0
    if report.onprem_curve is not None:
        xs, ys = curve_points(report.onprem_curve)
        axes.plot(xs, ys, color="black", linewidth=2.5, label="on-prem (owned)")
        ceiling = max(ceiling, report.onprem_curve.at(0.2))
    for market in report.markets:
        ceiling = max(ceiling, market.curve.at(0.2))
        _draw_market(axes, market, marked=report.onprem_curve is not None)
    axes.axvline(report.utilization * 100, color="grey", linestyle=":", label=f"u = {report.utilization:.0%}")
    axes.set_ylim(0, ceiling * 1.05 if ceiling > 0 else None)
    axes.set_xlim(0, 100)
    axes.set_xlabel("GPU utilization (%)")
    axes.set_ylabel("effective $ per used GPU-hour")
    axes.set_title(f"{report.cluster}: effective cost per GPU-hour ({report.instance_type or 'no AWS type'})")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper right", fontsize=9)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, format="png")
    pyplot.close(figure)
    return out


def _draw_market(axes: Axes, market: MarketResult, *, marked: bool) -> None:
    xs, ys = curve_points(market.curve)
    style = "--" if market.price.committed else "-"
    label = f"{market.price.label} ({market.price.instance_type})"
    (line,) = axes.plot(xs, ys, style, linewidth=1.8, label=label)
    even = market.break_even_utilization
    if even is not None and marked:
        cost = market.curve.at(even)
        axes.plot([even * 100], [cost], "o", color=line.get_color(), markersize=8)
        axes.annotate(
            f"break-even {even:.0%}: ${cost:.2f}",
            (even * 100, cost),
            textcoords="offset points",
            xytext=(6, 8),
            fontsize=9,
        )
