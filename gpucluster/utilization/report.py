"""A measurement as a table or JSON, with the figure that decides and the verdict of the guides' rule.

Which figure decides: the owned rack GPUs' engine-active GPU-hours over the GPU-hours they were owned
(the cluster file's rack GPUs times the window). The guides' rule asks whether owned capacity would be
busy enough to pay for itself, counted across all GPUs including idle queues; a rack GPU costs the same
whether it computes, idles, or is down, so an hour nobody scraped (node down, drained, unmonitored) is
counted as an idle hour, not left out. `coverage` shows how much of that time was scraped, and the
notes warn when it is low. Cloud GPUs are paid only while powered up and carry no such question: their
active / available says how well the paid hours were used (the burst overhead of docs/cost.md), not
whether to own them. Without rack GPUs (a cloud-only cluster) the overall figure stands in, and the
text says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.cost.recommend import Verdict, rule_of_thumb
from gpucluster.utilization.measure import Figures, Measurement

SITE_OF = {"onprem": "rack", "aws": "cloud"}  # node groups' site → the `site` label the scrape adds
LOW_COVERAGE = 0.9  # below this share of declared rack GPU-hours scraped, the report warns


@dataclass(frozen=True)
class Decision:
    """The figure the verdict reads, what it is, and what the cluster file's bands make of it."""

    utilization: float
    figure: str
    verdict: Verdict
    bands: str


def decide(cluster: Cluster, measurement: Measurement) -> Decision:
    """Rack GPUs' active over owned GPU-hours when the cluster has rack GPUs, else the overall figure."""
    owned_hours = sum(declared_gpus(cluster).values()) * measurement.hours
    rack = measurement.site("rack")
    if owned_hours > 0:
        active = rack.active_gpu_hours if rack else 0.0
        u, figure = min(active / owned_hours, 1.0), "rack GPUs' engine-active / owned GPU-hours"
    else:
        u, figure = (
            measurement.overall.activity,
            "all GPUs' engine-active / available (no rack GPUs declared)",
        )
    bands = cluster.economics.verdict
    text = f"economics.verdict: cloud below {bands.cloud_below:.0%}, on-prem above {bands.onprem_above:.0%}"
    return Decision(u, figure, rule_of_thumb(u, bands), text)


def declared_gpus(cluster: Cluster) -> dict[str, int]:
    """GPUs each rack node group owns (the denominator of coverage)."""
    return {g.name: len(g.nodes) * g.gpu_count for g in node_groups(cluster) if g.site == "onprem"}


def coverage(cluster: Cluster, measurement: Measurement, row: Figures) -> float | None:
    """Scraped / declared GPU-hours of a rack row (None for cloud rows: they are paid only while up)."""
    owned = declared_gpus(cluster)
    if row.site != "rack":
        return None
    gpus = owned.get(row.node_group, 0) if row.node_group else sum(owned.values())
    whole = gpus * measurement.hours
    return row.available_gpu_hours / whole if whole > 0 else None


def warnings(cluster: Cluster, measurement: Measurement) -> list[str]:
    """What makes the figures less than they seem: unlabelled series, rack time not scraped."""
    notes = []
    if any(f.site == "unlabelled" for f in measurement.sites):
        notes.append(
            "some series carry no site/node_group label: are they scraped by the rendered prometheus.yml?"
        )
    rack = measurement.site("rack")
    share = coverage(cluster, measurement, rack) if rack else None
    if share is not None and share < LOW_COVERAGE:
        notes.append(
            f"only {share:.0%} of the declared rack GPU-hours were scraped (nodes down or not monitored);"
            " the verdict counts the rest as idle, the per-row figures cover the scraped time only"
        )
    return notes


def _window(measurement: Measurement) -> str:
    start = datetime.fromtimestamp(measurement.start_s, UTC)
    end = datetime.fromtimestamp(measurement.end_s, UTC)
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC ({measurement.hours / 24:.1f} d)"


def origin(source: str, measurement: Measurement, decision: Decision) -> str:
    """The cost report's origin line: what was measured, where, and over which window."""
    return f"DCGM measured, {decision.figure}, {source}, {_window(measurement)}"


_HEADER = (
    "site",
    "node group",
    "GPUs",
    "available",
    "allocated",
    "active",
    "idle alloc",
    "alloc",
    "active",
    "coverage",
)


def _row(cluster: Cluster, measurement: Measurement, f: Figures, label: str) -> tuple[str, ...]:
    share = coverage(cluster, measurement, f)
    return (
        f.site,
        label,
        str(f.gpus),
        f"{f.available_gpu_hours:,.1f}",
        f"{f.allocated_gpu_hours:,.1f}",
        f"{f.active_gpu_hours:,.1f}",
        f"{f.idle_allocated_gpu_hours:,.1f}",
        f"{f.allocation:.1%}",
        f"{f.activity:.1%}",
        "—" if share is None else f"{share:.1%}",
    )


def as_table(cluster: Cluster, measurement: Measurement, source: str) -> str:
    """Plain text: the window, GPU-hours per node group, site and overall, and the verdict."""
    rows = [_row(cluster, measurement, f, f.node_group) for f in measurement.groups]
    rows += [_row(cluster, measurement, f, "(site)") for f in measurement.sites]
    rows.append(_row(cluster, measurement, measurement.overall, "(all)"))
    widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]
    lines = [
        f"GPU utilization of {cluster.name} measured by DCGM, {_window(measurement)}",
        f"source {source}, step {measurement.step_s:g} s; GPU-hours",
        "",
    ]
    for row in [_HEADER, *rows]:
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    decision = decide(cluster, measurement)
    lines += [
        "",
        f"Verdict: {decision.verdict} — {decision.figure} = {decision.utilization:.1%} ({decision.bands});"
        " `gpucluster cost --utilization-from-export` weighs it against the costs",
    ]
    lines += [f"Note: {note}" for note in warnings(cluster, measurement)]
    return "\n".join(lines)


def _figures(cluster: Cluster, measurement: Measurement, f: Figures) -> dict[str, object]:
    return {
        "site": f.site,
        "node_group": f.node_group or None,
        "gpus": f.gpus,
        "available_gpu_hours": f.available_gpu_hours,
        "allocated_gpu_hours": f.allocated_gpu_hours,
        "active_gpu_hours": f.active_gpu_hours,
        "idle_allocated_gpu_hours": f.idle_allocated_gpu_hours,
        "allocation": f.allocation,
        "activity": f.activity,
        "active_of_allocated": f.active_of_allocated,
        "coverage": coverage(cluster, measurement, f),
    }


def as_json(cluster: Cluster, measurement: Measurement, source: str) -> str:
    """Everything as JSON: window, groups, sites, overall, daily per site, the decision and notes."""
    decision = decide(cluster, measurement)
    doc = {
        "source": source,
        "window": {
            "start": datetime.fromtimestamp(measurement.start_s, UTC).isoformat(),
            "end": datetime.fromtimestamp(measurement.end_s, UTC).isoformat(),
            "hours": measurement.hours,
            "step_s": measurement.step_s,
        },
        "groups": [_figures(cluster, measurement, f) for f in measurement.groups],
        "sites": [_figures(cluster, measurement, f) for f in measurement.sites],
        "overall": _figures(cluster, measurement, measurement.overall),
        "daily": {
            site: [
                {
                    "day": d.day.isoformat(),
                    "available_gpu_hours": d.available_gpu_hours,
                    "allocated_gpu_hours": d.allocated_gpu_hours,
                    "active_gpu_hours": d.active_gpu_hours,
                }
                for d in days
            ]
            for site, days in measurement.daily.items()
        },
        "verdict": {
            "utilization": decision.utilization,
            "figure": decision.figure,
            "verdict": decision.verdict,
            "bands": decision.bands,
        },
        "notes": warnings(cluster, measurement),
    }
    return json.dumps(doc, indent=2)
