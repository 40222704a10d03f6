"""The cluster as node groups: racks and AWS capacity groups seen the same way by Slurm and Ansible."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Literal, NamedTuple

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
class GpuVariant:
    """The nodes of a group that carry one GPU model, and (cloud groups) the instance types behind them."""

    gpu: GpuModel
    nodes: tuple[Node, ...]
    instance_types: tuple[str, ...] = ()  # empty for racks
    prefix: str = ""  # cloud names are `<prefix>-<n>` (e.g. p5-spot, p5-spot-h200); "" for racks

    @property
    def hosts(self) -> tuple[str, ...]:
        """Slurm node names of this model's nodes."""
        return tuple(node.name for node in self.nodes)


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
    # One entry per GPU model the group's nodes carry: one for racks and most cloud groups; a cloud group
    # that declares mixed_gpus has one per model, each under its own node names (see cloud_variants).
    variants: tuple[GpuVariant, ...] = ()
    max_running: int | None = None  # a mixed cloud group: the one max_count its models' names share

    @property
    def max_nodes(self) -> int:
        """Most nodes the group runs at once (capacity for cost; a mixed group's names exceed it)."""
        return self.max_running if self.max_running is not None else len(self.nodes)

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
    nodes = tuple(Node(h.name, h.address, h.ipoib_address) for h in rack_hosts(rack))
    gpu = GPU_MODELS[profile.gpus.model]
    return NodeGroup(
        name=rack.name,
        site="onprem",
        nodes=nodes,
        gpu=gpu,
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
        variants=(GpuVariant(gpu, nodes),),
    )


def _cloud_group(group: CapacityGroup) -> NodeGroup:
    itype = INSTANCE_TYPES[group.instance_type]
    variants = tuple(
        GpuVariant(
            GPU_MODELS[v.model], tuple(Node(name, None) for name in v.names), v.instance_types, v.prefix
        )
        for v in cloud_variants(group)
    )
    return NodeGroup(
        name=group.name,
        site="aws",
        nodes=tuple(node for variant in variants for node in variant.nodes),
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
        variants=variants,
        max_running=group.max_count if len(variants) > 1 else None,
    )


class CloudVariant(NamedTuple):
    """The node names of one GPU model of a capacity group and the instance types launched under them."""

    model: str  # GPU model key in the catalog
    instance_types: tuple[str, ...]
    prefix: str  # the names are `<prefix>-1` … `<prefix>-<max_count>`
    names: list[str]


def cloud_variants(group: CapacityGroup) -> list[CloudVariant]:
    """One entry per GPU model a capacity group may launch, its primary type's model first.

    One entry, `<group>-1…N` launching every type, unless the group declares mixed_gpus: then each model
    gets its own names so its Slurm line can name its GRES type, the primary's model keeping
    `<group>-<n>` and each other model `<group>-<type>-<n>` (e.g. p5-spot-h200-1). Each model may use
    every one of the max_count names; the ResumeProgram holds the group to max_count in all. Types
    missing from the catalog are left out (the validator reports them).
    """
    types = [t for t in (group.instance_type, *group.fallback_instance_types) if t in INSTANCE_TYPES]
    by_model: dict[str, list[str]] = {}
    for name in types:
        by_model.setdefault(INSTANCE_TYPES[name].gpu if group.mixed_gpus else "", []).append(name)
    if not group.mixed_gpus or len(by_model) < 2:
        model = INSTANCE_TYPES[types[0]].gpu if types else ""
        return [CloudVariant(model, tuple(types), group.name, cloud_node_names(group.name, group.max_count))]
    primary = INSTANCE_TYPES[types[0]].gpu
    variants = []
    for model, members in by_model.items():
        prefix = group.name if model == primary else f"{group.name}-{GPU_MODELS[model].slurm_type}"
        variants.append(
            CloudVariant(model, tuple(members), prefix, cloud_node_names(prefix, group.max_count))
        )
    return variants


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
