"""The monthly bill of the routing policy: cloud rows from a replayed sacct history, not from max_count.

Without a replay, a cloud group's month is max_count × utilization × 730 hours: every group busy as often
as the racks. With one, the groups behind the route partitions are billed what the policy sent them in
the replayed window (run, boot and idle tail per node), scaled to 730 hours; other groups (a capacity
block, a group no route reaches) keep their rows.
"""

from __future__ import annotations

import dataclasses

from gpucluster.clusterfile.model import Cluster
from gpucluster.cost.analysis import CostReport, GroupMonthly
from gpucluster.cost.inputs import InputFigure
from gpucluster.cost.utilization import partition_gpus
from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.summary import ReplaySummary

_MARKET = {"spot": "spot"}  # every other route's cloud part runs on the cloud partition: on-demand


def _partition_of(config: RoutingConfig, route: str) -> str | None:
    return config.spot_partition if route == "spot" else config.cloud_partition


def route_rows(cluster: Cluster, config: RoutingConfig, summary: ReplaySummary) -> list[GroupMonthly]:
    """One monthly row per route that sends work to the cloud: its partition's GPUs and its bill."""
    gpus = partition_gpus(cluster)
    rows = []
    for totals in summary.routes:
        partition = _partition_of(config, totals.name)
        if totals.billed_node_hours <= 0 or partition is None:
            continue
        market = _MARKET.get(totals.name, "on-demand")
        name = f"route {totals.name} → {partition}"
        rows.append(GroupMonthly(name, "aws", market, gpus.get(partition, 0), summary.per_month(totals.usd)))
    return rows


def _routed_groups(cluster: Cluster, config: RoutingConfig) -> set[str]:
    names = {p for p in (config.cloud_partition, config.spot_partition) if p}
    return {g for p in cluster.slurm.partitions if p.name in names for g in p.node_groups}


def with_routing(
    report: CostReport, cluster: Cluster, config: RoutingConfig, summary: ReplaySummary, source: str
) -> CostReport:
    """The report with the routed groups' rows replaced by the policy's, and the replay as an input."""
    routed = _routed_groups(cluster, config)
    kept = [row for row in report.monthly if row.site != "aws" or row.name not in routed]
    cloud_gpu_hours = summary.per_month(summary.cloud_gpu_hours)
    figure = InputFigure(
        "cloud GPU-hours per month (routing)",
        f"{cloud_gpu_hours:,.0f}",
        f"replay of {source} ({summary.window_hours:.0f} h) through {cluster.name}'s routing section",
    )
    note = (
        f"routed groups ({', '.join(sorted(routed))}) are billed from the replay: per node its run, a"
        f" {config.cloud_boot_s // 60} min boot and its idle tail, scaled to 730 h; the replay assumes cloud"
        " capacity and the scheduler's plan (docs/routing.md)"
    )
    return dataclasses.replace(
        report,
        monthly=kept + route_rows(cluster, config, summary),
        inputs=[*report.inputs, figure],
        notes=[*report.notes, note],
    )
