"""Values the templates need, computed from the cluster alone (never from host facts)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Final

from gpucluster.clusterfile.hostlist import compress
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.software import Partition
from gpucluster.clusterfile.nodes import NodeGroup, node_groups
from gpucluster.health.catalogue import catalogue, prolog_epilog_timeout_s
from gpucluster.names import HEALTH_PROGRAM, POWER_BIN, power_partition
from gpucluster.render.fabric import version_tuple

# From 25.11 slurmctld serves OpenMetrics on SlurmctldPort (MetricsType=metrics/openmetrics), and only
# while no PrivateData is set: https://slurm.schedmd.com/metrics.html
SLURM_METRICS_FROM: Final = (25, 11)


def slurm_serves_metrics(cluster: Cluster) -> bool:
    """Whether the pinned Slurm has slurmctld's built-in metrics (MetricsType, from 25.11)."""
    return version_tuple(cluster.versions.slurm)[:2] >= SLURM_METRICS_FROM


@dataclass(frozen=True)
class ControllerHost:
    """A host's name and management address (the Slurm controller, or any rack host)."""

    name: str
    address: IPv4Address


@dataclass(frozen=True)
class NodeLine:
    """One NodeName line of slurm.conf and its gres.conf counterpart: one GPU model of a node group."""

    group: NodeGroup
    hostlist: str
    gres: str
    gres_type: str  # "" for a node without GPUs
    features: str
    cloud: bool
    weight: int  # Slurm fills lower weights first: racks, then paid-for blocks, spot, on-demand


@dataclass(frozen=True)
class PartitionLine:
    """One PartitionName line of slurm.conf."""

    name: str
    hostlist: str
    default: bool
    max_time: str
    def_cpu_per_gpu: int | None  # None: the partition has no GPUs
    def_mem_per_gpu_mib: int | None


@dataclass(frozen=True)
class LeafSwitch:
    """A topology.conf leaf switch: the nodes of one node group (rack or placement group)."""

    name: str
    hostlist: str


@dataclass(frozen=True)
class FabricSwitch:
    """A topology.conf switch over the node groups of one fabric of one site."""

    name: str
    leaves: tuple[str, ...]


@dataclass(frozen=True)
class PowerGroupLine:
    """A hidden, inactive partition that carries one cloud group's power settings (no jobs run in it)."""

    name: str
    hostlist: str
    suspend_time_s: int
    resume_timeout_s: int


@dataclass(frozen=True)
class PowerLines:
    """Slurm power saving for the cloud groups: programs, rates and each group's times."""

    resume_program: str
    suspend_program: str
    resume_timeout_s: int  # the longest group's; each group's own is on its partition
    resume_rate: int
    suspend_rate: int
    exclude_nodes: str  # rack nodes and each cloud group's min_count static nodes: never powered down
    groups: tuple[PowerGroupLine, ...]


@dataclass(frozen=True)
class HealthLines:
    """How Slurm runs the health program (docs/health.md): its path, the interval, the prolog's timeout."""

    program: str
    interval_s: int
    prolog_epilog_timeout_s: int


def _health_lines(cluster: Cluster, groups: list[NodeGroup]) -> HealthLines | None:
    if not cluster.health.enabled or not groups:
        return None
    entries = [catalogue(cluster, group) for group in groups]
    return HealthLines(HEALTH_PROGRAM, cluster.health.interval_s, prolog_epilog_timeout_s(entries))


@dataclass(frozen=True)
class SlurmContext:
    """Everything slurm.conf, gres.conf and topology.conf are made of."""

    controller: ControllerHost
    accounting_host: ControllerHost | None
    nodes: tuple[NodeLine, ...]
    partitions: tuple[PartitionLine, ...]
    has_cloud_nodes: bool
    max_node_count: int
    power: PowerLines | None
    leaves: tuple[LeafSwitch, ...] = ()
    fabrics: tuple[FabricSwitch, ...] = ()
    allow_fabric_spanning: bool = False
    reboot_timeout_s: int | None = None  # rack nodes: how long `scontrol reboot` waits for one to return
    metrics: bool = False  # MetricsType=metrics/openmetrics (Slurm >= 25.11), so no PrivateData
    health: HealthLines | None = None  # per-job node health, where the cluster file enables it


def onprem_hosts(cluster: Cluster) -> list[ControllerHost]:
    """Every on-prem host with its management address, service hosts first, then rack nodes."""
    hosts = (
        [ControllerHost(h.name, h.address) for h in cluster.onprem.service_hosts] if cluster.onprem else []
    )
    for group in node_groups(cluster):
        hosts += [ControllerHost(n.name, n.address) for n in group.nodes if n.address is not None]
    return hosts


def _host_address(cluster: Cluster, name: str) -> ControllerHost:
    found = next((host for host in onprem_hosts(cluster) if host.name == name), None)
    if found is not None:
        return found
    if cluster.aws and cluster.aws.head_node and cluster.aws.head_node.name == name:
        return ControllerHost(name, cluster.aws.head_node.address)
    raise ValueError(f"host {name!r} has no address (the loader should have rejected this)")


# Node weights by market: Slurm allocates the lowest weight first, so a job that may run on several
# groups uses the racks, then capacity it has paid for, then spot, and on-demand last.
WEIGHTS: Final = {"onprem": 1, "capacity-block": 10, "spot": 50, "on-demand": 100}


def _node_lines(group: NodeGroup, market: str) -> list[NodeLine]:
    """One line per GPU model of the group, each naming its GRES type and model feature.

    A cloud group of mixed GPU models has one line per model under its own names, so `--gres=gpu:h100`
    or `--constraint=h100` never lands on another model; its other models weigh a little more, so the
    primary type's names power up first.
    """
    lines = []
    for rank, variant in enumerate(group.variants):
        gres_type = variant.gpu.slurm_type if group.gpu_count else ""
        gres = f"gpu:{gres_type}:{group.gpu_count}" if group.gpu_count else ""
        features = ",".join(f for f in (group.site, group.name, gres_type) if f)
        hostlist = compress(list(variant.hosts))
        lines.append(
            NodeLine(group, hostlist, gres, gres_type, features, group.site == "aws", WEIGHTS[market] + rank)
        )
    return lines


def _power_lines(cluster: Cluster, groups: dict[str, NodeGroup]) -> PowerLines | None:
    if cluster.aws is None or not cluster.aws.capacity:
        return None
    lines = tuple(
        PowerGroupLine(
            power_partition(group.name),
            compress(list(groups[group.name].hosts)),
            group.idle_minutes * 60,
            group.resume_timeout_s,
        )
        for group in cluster.aws.capacity
    )
    rack_hosts = [h for g in groups.values() if g.site == "onprem" for h in g.hosts]
    # A group's first min_count nodes are static: never suspended (the reconciler keeps them powered up).
    static = [h for group in cluster.aws.capacity for h in groups[group.name].hosts[: group.min_count]]
    excluded = rack_hosts + static
    return PowerLines(
        resume_program=f"{POWER_BIN}/gpucluster-resume",
        suspend_program=f"{POWER_BIN}/gpucluster-suspend",
        resume_timeout_s=max(line.resume_timeout_s for line in lines),
        resume_rate=cluster.aws.burst.resume_rate,
        suspend_rate=cluster.aws.burst.suspend_rate,
        exclude_nodes=compress(excluded) if excluded else "",
        groups=lines,
    )


def _per_gpu(partition: Partition, groups: dict[str, NodeGroup]) -> tuple[int | None, int | None]:
    """DefCpuPerGPU and DefMemPerGPU: the cluster file's, else the smallest GPU node's share per GPU.

    A node with fewer CPUs than GPUs (a test rack) gets no CPU default: any would make a job that asks
    for all its GPUs unschedulable.
    """
    gpu_groups = [groups[name] for name in partition.node_groups if groups[name].gpu_count]
    if not gpu_groups:
        return None, None
    cpus = partition.def_cpu_per_gpu or min(g.cpus // g.gpu_count for g in gpu_groups)
    memory = partition.def_mem_per_gpu_mib or min(g.real_memory_mib // g.gpu_count for g in gpu_groups)
    return cpus or None, memory or None


def _fabric_switches(groups: list[NodeGroup]) -> tuple[FabricSwitch, ...]:
    """One switch per (site, fabric): node groups on one fabric may share jobs, others may not."""
    by_fabric: dict[str, list[str]] = {}
    for group in groups:
        fabric = group.fabric.key if group.fabric else "ethernet"
        by_fabric.setdefault(f"{group.site}-{fabric}", []).append(group.name)
    return tuple(FabricSwitch(name, tuple(leaves)) for name, leaves in by_fabric.items())


def slurm_context(cluster: Cluster) -> SlurmContext:
    """Node, partition and controller lines for the Slurm templates."""
    groups = {g.name: g for g in node_groups(cluster)}
    partitions = tuple(
        PartitionLine(
            p.name,
            compress([h for name in p.node_groups for h in groups[name].hosts]),
            p.default,
            p.max_time,
            *_per_gpu(p, groups),
        )
        for p in cluster.slurm.partitions
    )
    accounting = cluster.slurm.accounting
    markets = {g.name: g.market for g in cluster.aws.capacity} if cluster.aws else {}
    return SlurmContext(
        controller=_host_address(cluster, cluster.slurm.controller),
        accounting_host=(
            _host_address(cluster, accounting.host or cluster.slurm.controller)
            if accounting.enabled
            else None
        ),
        nodes=tuple(line for g in groups.values() for line in _node_lines(g, markets.get(g.name, "onprem"))),
        partitions=partitions,
        has_cloud_nodes=any(g.site == "aws" for g in groups.values()),
        max_node_count=sum(len(g.hosts) for g in groups.values()),
        power=_power_lines(cluster, groups),
        leaves=tuple(LeafSwitch(g.name, compress(list(g.hosts))) for g in groups.values()),
        fabrics=_fabric_switches(list(groups.values())),
        allow_fabric_spanning=cluster.slurm.allow_fabric_spanning,
        reboot_timeout_s=(
            cluster.onprem.reboots.timeout_s
            if cluster.onprem and any(g.site == "onprem" for g in groups.values())
            else None
        ),
        metrics=slurm_serves_metrics(cluster),
        health=_health_lines(cluster, list(groups.values())),
    )
