"""Values the templates need, computed from the cluster alone (never from host facts)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

from gpucluster.clusterfile.hostlist import compress
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import NodeGroup, node_groups


@dataclass(frozen=True)
class ControllerHost:
    """A host's name and management address (the Slurm controller, or any rack host)."""

    name: str
    address: IPv4Address


@dataclass(frozen=True)
class NodeLine:
    """One NodeName line of slurm.conf and its gres.conf counterpart."""

    group: NodeGroup
    hostlist: str
    gres: str
    features: str
    cloud: bool


@dataclass(frozen=True)
class PartitionLine:
    """One PartitionName line of slurm.conf."""

    name: str
    hostlist: str
    default: bool
    max_time: str


@dataclass(frozen=True)
class SlurmContext:
    """Everything slurm.conf, gres.conf and topology.conf are made of."""

    controller: ControllerHost
    accounting_host: ControllerHost | None
    nodes: tuple[NodeLine, ...]
    partitions: tuple[PartitionLine, ...]
    has_cloud_nodes: bool
    max_node_count: int


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


def _node_line(group: NodeGroup) -> NodeLine:
    gres = f"gpu:{group.gpu.slurm_type}:{group.gpu_count}" if group.gpu_count else ""
    features = ",".join([group.site, group.name, group.gpu.slurm_type])
    return NodeLine(group, compress(list(group.hosts)), gres, features, group.site == "aws")


def slurm_context(cluster: Cluster) -> SlurmContext:
    """Node, partition and controller lines for the Slurm templates."""
    groups = {g.name: g for g in node_groups(cluster)}
    partitions = tuple(
        PartitionLine(
            p.name,
            compress([h for name in p.node_groups for h in groups[name].hosts]),
            p.default,
            p.max_time,
        )
        for p in cluster.slurm.partitions
    )
    accounting = cluster.slurm.accounting
    return SlurmContext(
        controller=_host_address(cluster, cluster.slurm.controller),
        accounting_host=(
            _host_address(cluster, accounting.host or cluster.slurm.controller)
            if accounting.enabled
            else None
        ),
        nodes=tuple(_node_line(g) for g in groups.values()),
        partitions=partitions,
        has_cloud_nodes=any(g.site == "aws" for g in groups.values()),
        max_node_count=sum(len(g.hosts) for g in groups.values()),
    )
