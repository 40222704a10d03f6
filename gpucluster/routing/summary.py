"""Totals of a replay per route and per class: GPU-hours where they ran, cloud bill, waits."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field

from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.replay import Placement, billed_node_hours

HOURS_PER_MONTH = 730.0


@dataclass
class RouteTotals:
    """One route (or one class): jobs, GPU-hours on the racks and in the cloud, the bill, the waits."""

    name: str
    jobs: int = 0
    rack_gpu_hours: float = 0.0
    cloud_gpu_hours: float = 0.0
    billed_node_hours: float = 0.0
    usd: float = 0.0
    waits_s: list[float] = field(default_factory=list, repr=False)
    recorded_waits_s: list[float] = field(default_factory=list, repr=False)
    outcomes: Counter[str] = field(default_factory=Counter)

    def add(self, config: RoutingConfig, placed: Placement) -> None:
        """Count one placement."""
        job = placed.job
        self.jobs += 1
        gpu_hours = job.gpus * job.run_s / 3600
        price = config.prices.get(placed.partition)
        if price is None:
            self.rack_gpu_hours += gpu_hours
        else:
            billed = billed_node_hours(config, placed.partition, job)
            self.cloud_gpu_hours += gpu_hours
            self.billed_node_hours += billed
            self.usd += billed * price.usd_per_node_hour
        self.waits_s.append(placed.wait_s)
        self.recorded_waits_s.append(job.recorded_wait_s)
        self.outcomes[placed.why] += 1


@dataclass
class ReplaySummary:
    """A replay's totals, its window and the figures scaled to a 730-hour month."""

    window_hours: float
    routes: list[RouteTotals]
    classes: list[RouteTotals]

    @property
    def cloud_gpu_hours(self) -> float:
        """GPU-hours the policy sends to the cloud (cloud and spot) in the window."""
        return sum(r.cloud_gpu_hours for r in self.routes)

    @property
    def usd(self) -> float:
        """The cloud bill of the window."""
        return sum(r.usd for r in self.routes)

    def per_month(self, value: float) -> float:
        """A window figure scaled to a 730-hour month."""
        return value * HOURS_PER_MONTH / self.window_hours if self.window_hours > 0 else 0.0


def summarize(config: RoutingConfig, placements: list[Placement]) -> ReplaySummary:
    """Per-route and per-class totals of a replay."""
    routes: dict[str, RouteTotals] = {}
    classes: dict[str, RouteTotals] = {}
    for placed in placements:
        routes.setdefault(placed.route, RouteTotals(placed.route)).add(config, placed)
        classes.setdefault(placed.job_class, RouteTotals(placed.job_class)).add(config, placed)
    if placements:
        first = min(p.job.submit for p in placements)
        last = max(p.job.end for p in placements)
        window = max(0.0, last - first) / 3600
    else:
        window = 0.0
    return ReplaySummary(window, list(routes.values()), list(classes.values()))


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _wait_cells(totals: RouteTotals) -> list[str]:
    waits, recorded = totals.waits_s, totals.recorded_waits_s
    mean = sum(waits) / len(waits) / 60 if waits else 0.0
    before = sum(recorded) / len(recorded) / 60 if recorded else 0.0
    return [
        f"{mean:.1f}",
        f"{percentile(waits, 0.95) / 60:.1f}",
        f"{max(waits, default=0) / 60:.1f}",
        f"{before:.1f}",
    ]


def _rows(items: list[RouteTotals]) -> list[list[str]]:
    return [
        [t.name, str(t.jobs), f"{t.rack_gpu_hours:,.1f}", f"{t.cloud_gpu_hours:,.1f}",
         f"{t.billed_node_hours:,.1f}", f"{t.usd:,.2f}", *_wait_cells(t)]
        for t in items
    ]  # fmt: skip


HEADER = ["", "jobs", "rack GPU-h", "cloud GPU-h", "billed inst-h", "cloud $", "wait mean min", "p95", "max",
          "recorded mean"]  # fmt: skip


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [HEADER, *rows]]


def as_text(summary: ReplaySummary, source: str) -> str:
    """The replay as tables: per route, per class, then the month's cloud figures."""
    lines = [
        f"Replay of {source}: {sum(r.jobs for r in summary.routes)} jobs over {summary.window_hours:.1f} h",
        "",
    ]
    lines += [
        "Per route:",
        *_table(_rows(summary.routes)),
        "",
        "Per class:",
        *_table(_rows(summary.classes)),
        "",
    ]
    for totals in summary.classes:
        outcomes = ", ".join(f"{why} {count}" for why, count in sorted(totals.outcomes.items()))
        lines.append(f"  {totals.name}: {outcomes}")
    lines += [
        "",
        f"Cloud GPU-hours {summary.cloud_gpu_hours:,.1f}, cloud bill ${summary.usd:,.2f} in the window;"
        f" per 730-hour month {summary.per_month(summary.cloud_gpu_hours):,.1f} GPU-h,"
        f" ${summary.per_month(summary.usd):,.2f}",
        "Waits in minutes from submit to start; `recorded` is the history's own. Rack waits of jobs that stay"
        " are as recorded (an upper bound); bursts assume cloud capacity and the scheduler's plan.",
    ]
    return "\n".join(lines)


def as_json(summary: ReplaySummary) -> str:
    """The replay's totals as JSON (waits as mean, p95 and max minutes)."""

    def entry(t: RouteTotals) -> dict[str, object]:
        data = {k: v for k, v in asdict(t).items() if k not in ("waits_s", "recorded_waits_s", "outcomes")}
        data["outcomes"] = dict(t.outcomes)
        mean, p95, worst, recorded = (float(c) for c in _wait_cells(t))
        return {**data, "wait_minutes": {"mean": mean, "p95": p95, "max": worst, "recorded_mean": recorded}}

    return json.dumps(
        {
            "window_hours": summary.window_hours,
            "routes": [entry(r) for r in summary.routes],
            "classes": [entry(c) for c in summary.classes],
            "cloud_gpu_hours": summary.cloud_gpu_hours,
            "usd": summary.usd,
            "per_month": {
                "cloud_gpu_hours": summary.per_month(summary.cloud_gpu_hours),
                "usd": summary.per_month(summary.usd),
            },
        },
        indent=2,
    )
