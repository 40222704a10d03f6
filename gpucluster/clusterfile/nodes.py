"""The cluster as node groups: racks and AWS capacity groups seen the same way by Slurm and Ansible."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Literal

from gpucluster.clusterfile.catalog.hardware import FABRICS, GPU_MODELS, INSTANCE_TYPES, Fabric, GpuModel
from gpucluster.clusterfile.hostlist import expand
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.clusterfile.model.onprem import Host, Rack
from gpucluster.names import cloud_node_names

Site = Literal["onprem", "aws"]
# Memory kept back for the OS and daemons so slurmd never reports less than RealMemory.
OS_MEMORY_RESERVE_FRACTION = 0.03


@dataclass(frozen=True)
class NodeGroup:
    """GPU nodes with identical hardware: one rack or one capacity group."""

    name: str
    site: Site
    hosts: tuple[str, ...]
    addresses: tuple[IPv4Address | None, ...]
    gpu: GpuModel
    gpu_count: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_gib: int
    fabric: Fabric | None
    fabric_ports: int
    hca_prefix: str
    nvswitch: bool
    profile: str  # hardware profile name, or the instance type for AWS groups

    @property
    def cpus(self) -> int:
        """Logical CPUs per node."""
        return self.sockets * self.cores_per_socket * self.threads_per_core

    @property
    def real_memory_mib(self) -> int:
        """Slurm RealMemory: declared memory less the OS reserve."""
        return int(self.memory_gib * 1024 * (1 - OS_MEMORY_RESERVE_FRACTION))


def rack_hosts(rack: Rack) -> list[Host]:
    """Every host of a rack: the explicit list, then the expanded node range."""
    hosts = list(rack.nodes)
    if rack.node_range is not None:
        first = rack.node_range.first_address
        names = expand(rack.node_range.pattern)
        ipoib = rack.node_range.first_ipoib_address
        hosts += [
            Host(name=n, address=first + i, ipoib_address=ipoib + i if ipoib else None)
            for i, n in enumerate(names)
        ]
    return hosts


def node_groups(cluster: Cluster) -> list[NodeGroup]:
    """Racks first, then capacity groups, in file order (a validated cluster only)."""
    groups: list[NodeGroup] = []
    if cluster.onprem:
        for rack in cluster.onprem.racks:
            groups.append(_rack_group(cluster, rack))
    if cluster.aws:
        groups += [_cloud_group(group) for group in cluster.aws.capacity]
    return groups


def _rack_group(cluster: Cluster, rack: Rack) -> NodeGroup:
    assert cluster.onprem is not None
    profile = cluster.onprem.profiles[rack.profile]
    hosts = rack_hosts(rack)
    return NodeGroup(
        name=rack.name,
        site="onprem",
        hosts=tuple(h.name for h in hosts),
        addresses=tuple(h.address for h in hosts),
        gpu=GPU_MODELS[profile.gpus.model],
        gpu_count=profile.gpus.count,
        sockets=profile.cpus.sockets,
        cores_per_socket=profile.cpus.cores_per_socket,
        threads_per_core=profile.cpus.threads_per_core,
        memory_gib=profile.memory_gib,
        fabric=FABRICS[profile.hcas.fabric] if profile.hcas.count else None,
        fabric_ports=profile.hcas.count,
        hca_prefix=profile.hcas.device_prefix,
        nvswitch=profile.nvswitch,
        profile=rack.profile,
    )


def _cloud_group(group: CapacityGroup) -> NodeGroup:
    itype = INSTANCE_TYPES[group.instance_type]
    names = cloud_node_names(group.name, group.max_count)
    return NodeGroup(
        name=group.name,
        site="aws",
        hosts=tuple(names),
        addresses=tuple(None for _ in names),
        gpu=GPU_MODELS[itype.gpu],
        gpu_count=itype.gpu_count,
        sockets=itype.sockets,
        cores_per_socket=itype.cores_per_socket,
        threads_per_core=itype.threads_per_core,
        memory_gib=itype.memory_gib,
        fabric=FABRICS[itype.fabric] if group.efa else None,
        fabric_ports=itype.max_efa_interfaces if group.efa else 0,
        hca_prefix="rdmap",
        nvswitch=itype.gpu_count == 8,
        profile=group.instance_type,
    )


def group_of_host(cluster: Cluster, host: str) -> NodeGroup | None:
    """The node group a host belongs to, or None for service hosts and unknown names."""
    for group in node_groups(cluster):
        if host in group.hosts:
            return group
    return None
