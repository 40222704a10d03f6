"""A human summary of a cluster: sites, node groups, GPUs and capacity."""

from __future__ import annotations

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.hostlist import compress
from gpucluster.clusterfile.load import Loaded
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.routing import JobClass, RoutePartitions
from gpucluster.clusterfile.nodes import NodeGroup, cloud_variants, node_groups
from gpucluster.pins import pin_lines


def summary(loaded: Loaded) -> str:
    """Multi-line text for `gpucluster show`."""
    cluster = loaded.cluster
    groups = node_groups(cluster)
    lines = [_title(cluster, loaded.source), *pin_lines(cluster)]
    racks = [g for g in groups if g.site == "onprem"]
    if cluster.onprem and racks:
        lines.append(
            f"On-prem ({cluster.onprem.management_cidr}): {len(racks)} rack(s), "
            f"{_nodes(racks)} nodes, {_gpus(racks)} GPUs"
        )
        lines += [_rack_line(g) for g in racks]
    clouds = [g for g in groups if g.site == "aws"]
    if cluster.aws and clouds:
        lines.append(
            f"AWS {cluster.aws.availability_zone} (VPC {cluster.aws.vpc_cidr}): "
            f"{len(clouds)} capacity group(s), up to {_nodes(clouds)} instances, "
            f"{_gpus(clouds)} GPUs"
        )
        lines += _cloud_lines(cluster)
    lines.append("Partitions:")
    for partition in cluster.slurm.partitions:
        mark = " (default)" if partition.default else ""
        lines.append(f"  {partition.name}{mark}: {', '.join(partition.node_groups)}")
    lines += _routing_lines(cluster)
    lines.append(f"Total: up to {_nodes(groups)} GPU nodes, {_gpus(groups)} GPUs")
    return "\n".join(lines)


def _title(cluster: Cluster, source: str) -> str:
    accounting = "on" if cluster.slurm.accounting.enabled else "off"
    return (
        f"Cluster {cluster.name} ({source}): Slurm {cluster.versions.slurm}, "
        f"controller {cluster.slurm.controller}, accounting {accounting}"
    )


def _nodes(groups: list[NodeGroup]) -> int:
    return sum(g.max_nodes for g in groups)


def _gpus(groups: list[NodeGroup]) -> int:
    return sum(g.max_nodes * g.gpu_count for g in groups)


def _rack_line(group: NodeGroup) -> str:
    fabric = f"{group.fabric_ports} × {group.fabric.name}" if group.fabric else "no HCAs"
    nvswitch = ", NVSwitch" if group.nvswitch else ""
    return (
        f"  {group.name:<12} {len(group.hosts):>3} nodes  {compress(list(group.hosts)):<24} "
        f"{group.profile}: {group.gpu_count} × {group.gpu.name}{nvswitch}, {fabric}"
    )


def _cloud_lines(cluster: Cluster) -> list[str]:
    assert cluster.aws is not None
    lines = []
    for group in cluster.aws.capacity:
        itype = INSTANCE_TYPES[group.instance_type]
        efa = f"EFA {group.efa_layout}" if group.efa else "no EFA"
        placement = "cluster placement group" if group.uses_placement_group else "no placement group"
        lines.append(
            f"  {group.name:<12} {group.instance_type} {group.market}, {group.min_count}–{group.max_count} "
            f"instances × {itype.gpu_count} GPUs, {efa}, {placement}, "
            f"${itype.on_demand_usd_per_hour:.2f}/h on-demand list"
        )
        variants = cloud_variants(group)
        if group.fallback_instance_types:
            names = ", ".join(f"{'/'.join(v.instance_types)} as {compress(v.names)}" for v in variants)
            lines.append(f"  {'':<12} may launch {names}")
    return lines


def _routing_lines(cluster: Cluster) -> list[str]:
    """Each class's route and guards, and what recognises it (docs/routing.md)."""
    routing = cluster.routing
    if routing is None:
        return []
    others = routing.default_class or "as submitted"
    lines = [f"Routing (a pass every {routing.interval_s} s; other jobs: {others}):"]
    for job_class in routing.classes:
        selectors = (("accounts", job_class.accounts), ("QOS", job_class.qos))
        who = "; ".join(f"{name} {', '.join(words)}" for name, words in selectors if words)
        lines.append(
            f"  {job_class.name}: {_route(job_class, routing.partitions)} ({who or 'comment tag only'})"
        )
    return lines


def _route(job_class: JobClass, parts: RoutePartitions) -> str:
    if job_class.route != "rack_then_cloud":
        return str(getattr(parts, job_class.route))
    text = f"{parts.rack}, then {parts.rack},{parts.cloud} after {job_class.after_wait_minutes} min"
    if job_class.max_cloud_nodes is not None:
        text += f", at most {job_class.max_cloud_nodes} cloud nodes"
    if job_class.budget_share is not None:
        text += f", {job_class.budget_share:.0%} of the budget"
    return text
