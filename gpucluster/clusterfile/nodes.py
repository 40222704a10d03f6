"""The cluster as node groups: racks and AWS capacity groups seen the same way by Slurm and Ansible."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Literal

from gpucluster.clusterfile.catalog.hardware import (
    FABRICS,
    GPU_MODELS,
    INSTANCE_TYPES,
    Fabric,
    GpuModel,
    InstanceType,
)
from gpucluster.clusterfile.hostlist import expand
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.clusterfile.model.onprem import HardwareProfile, Host, Rack
from gpucluster.names import cloud_node_names

Site = Literal["onprem", "aws"]
# Memory kept back for the OS and daemons so slurmd never reports less than RealMemory.
OS_MEMORY_RESERVE_FRACTION = 0.03


@dataclass(frozen=True)
class Node:
    """One GPU node of a node group: its Slurm name and, on racks, its declared addresses."""

    name: str
    address: IPv4Address | None  # management address; None on AWS, where the VPC assigns it
    ipoib_address: IPv4Address | None = None  # IPoIB address, when the rack declares one


@dataclass(frozen=True)
class NodeGroup:
    """GPU nodes with identical hardware: one rack or one capacity group.

    Consumers (inventory, renderer, acceptance) read a group's hardware from here and never look
    its profile up again by name. `hardware_profile` is the rack's HardwareProfile object; it is None
    for AWS capacity groups, whose hardware is the instance type named in `profile` and which the
    acceptance gate does not cover (there is no declared profile to hold acceptance settings).
    """

    name: str
    site: Site
    nodes: tuple[Node, ...]
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
    hardware_profile: HardwareProfile | None  # the rack's profile; None for AWS capacity groups
    gpu_typed: bool = True  # False: a cloud group that declares mixed GPU models; Slurm sees gpu:N only

    @property
    def hosts(self) -> tuple[str, ...]:
        """Node names in declaration order (Slurm node names)."""
        return tuple(node.name for node in self.nodes)

    @property
    def gpu_devices(self) -> tuple[str, ...]:
        """GPU device files of every node: /dev/nvidia0 … /dev/nvidiaN-1."""
        return tuple(f"/dev/nvidia{n}" for n in range(self.gpu_count))

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
    return NodeGroup(
        name=rack.name,
        site="onprem",
        nodes=tuple(Node(h.name, h.address, h.ipoib_address) for h in rack_hosts(rack)),
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
        hardware_profile=profile,
    )


def _cloud_group(group: CapacityGroup) -> NodeGroup:
    itype = INSTANCE_TYPES[group.instance_type]
    return NodeGroup(
        name=group.name,
        site="aws",
        nodes=tuple(Node(name, None) for name in cloud_node_names(group.name, group.max_count)),
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
        hardware_profile=None,
        gpu_typed=not group.mixed_gpus,
    )


def node_line_differences(primary: InstanceType, other: InstanceType, *, gpu_model: bool = True) -> list[str]:
    """What of a capacity group's Slurm node line (drawn from `primary`) would be false for `other`.

    With `gpu_model` False (a group that declares mixed GPUs) the GPU model and its memory may differ.
    """
    mine, theirs = GPU_MODELS[primary.gpu], GPU_MODELS[other.gpu]
    compared = [
        ("GPU model", mine.name, theirs.name, gpu_model),
        ("GPU memory", f"{mine.memory_gib} GiB", f"{theirs.memory_gib} GiB", gpu_model),
        ("GPU count", primary.gpu_count, other.gpu_count, True),
        ("sockets", primary.sockets, other.sockets, True),
        ("cores per socket", primary.cores_per_socket, other.cores_per_socket, True),
        ("threads per core", primary.threads_per_core, other.threads_per_core, True),
        ("memory", f"{primary.memory_gib} GiB", f"{other.memory_gib} GiB", True),
    ]
    return [f"{what} {b} (not {a})" for what, a, b, checked in compared if checked and a != b]


def group_of_host(cluster: Cluster, host: str) -> NodeGroup | None:
    """The node group a host belongs to, or None for service hosts and unknown names."""
    for group in node_groups(cluster):
        if host in group.hosts:
            return group
    return None
