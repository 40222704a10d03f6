"""Rules about hardware profiles and racks."""

from __future__ import annotations

from collections.abc import Iterator

from gpucluster.clusterfile.catalog.hardware import GPU_MODELS
from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.hostlist import expand
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.onprem import Host, Rack
from gpucluster.clusterfile.nodes import rack_hosts


def profile_gpu_model_known(cluster: Cluster) -> Iterator[Finding]:
    """A profile's GPU model must be in the catalog."""
    if not cluster.onprem:
        return
    for name, profile in cluster.onprem.profiles.items():
        if profile.gpus.model not in GPU_MODELS:
            yield Finding(
                ("onprem", "profiles", name, "gpus", "model"),
                f"unknown GPU model {profile.gpus.model!r}",
                f"use one of {', '.join(GPU_MODELS)}",
            )


def rack_profile_declared(cluster: Cluster) -> Iterator[Finding]:
    """A rack must name a declared hardware profile."""
    if not cluster.onprem:
        return
    for index, rack in enumerate(cluster.onprem.racks):
        if rack.profile not in cluster.onprem.profiles:
            known = ", ".join(cluster.onprem.profiles) or "none declared"
            yield Finding(
                ("onprem", "racks", index, "profile"),
                f"unknown hardware profile {rack.profile!r}",
                f"declare it under onprem.profiles or use one of: {known}",
            )


def rack_declares_nodes(cluster: Cluster) -> Iterator[Finding]:
    """A rack needs nodes (a list, a range, or both) and a range must count upwards."""
    if not cluster.onprem:
        return
    for index, rack in enumerate(cluster.onprem.racks):
        if not rack.nodes and rack.node_range is None:
            yield Finding(
                ("onprem", "racks", index),
                "rack has no nodes",
                "add `nodes:` (name and address each) or `node_range:`",
            )
        if rack.node_range is not None:
            try:
                expand(rack.node_range.pattern)
            except ValueError as exc:
                yield Finding(
                    ("onprem", "racks", index, "node_range", "pattern"),
                    str(exc),
                    "a node_range is one range of consecutive numbers, e.g. gpu-a[01-04]",
                )


def addresses_in_management_cidr(cluster: Cluster) -> Iterator[Finding]:
    """Every on-prem address must lie inside onprem.management_cidr."""
    if not cluster.onprem:
        return
    cidr = cluster.onprem.management_cidr
    hint = f"use an address inside {cidr} or widen onprem.management_cidr"
    for index, host in enumerate(cluster.onprem.service_hosts):
        if host.address not in cidr:
            yield Finding(
                ("onprem", "service_hosts", index, "address"), f"{host.address} is outside {cidr}", hint
            )
    for r_index, rack in enumerate(cluster.onprem.racks):
        for n_index, node in enumerate(rack.nodes):
            if node.address not in cidr:
                yield Finding(
                    ("onprem", "racks", r_index, "nodes", n_index, "address"),
                    f"{node.address} is outside {cidr}",
                    hint,
                )
        node_range = rack.node_range
        if node_range is None:
            continue
        try:
            count = len(expand(node_range.pattern))
        except ValueError:
            continue
        last_int = int(node_range.first_address) + max(count - 1, 0)
        if node_range.first_address not in cidr or last_int > int(cidr.broadcast_address):
            yield Finding(
                ("onprem", "racks", r_index, "node_range", "first_address"),
                f"{count} addresses from {node_range.first_address} leave {cidr}",
                hint,
            )


def subnet_manager_declared(cluster: Cluster) -> Iterator[Finding]:
    """The opensm host must be a declared on-prem host."""
    if not cluster.onprem or cluster.onprem.subnet_manager is None:
        return
    names = {h.name for h in cluster.onprem.service_hosts}
    names |= {h.name for rack in cluster.onprem.racks for h in _safe_hosts(rack)}
    if cluster.onprem.subnet_manager not in names:
        yield Finding(
            ("onprem", "subnet_manager"),
            f"{cluster.onprem.subnet_manager!r} is not a declared host",
            "name a service host or rack node, or leave it out when the switches run the SM",
        )


def ipoib_addresses_declared(cluster: Cluster) -> Iterator[Finding]:
    """Profiles with IPoIB need an address per node inside onprem.ipoib_cidr."""
    if not cluster.onprem:
        return
    cidr = cluster.onprem.ipoib_cidr
    for r_index, rack in enumerate(cluster.onprem.racks):
        profile = cluster.onprem.profiles.get(rack.profile)
        if profile is None or not profile.hcas.ipoib:
            continue
        path = ("onprem", "racks", r_index)
        if cidr is None:
            yield Finding(
                ("onprem", "ipoib_cidr"),
                f"profile {rack.profile!r} enables IPoIB without a network",
                "set onprem.ipoib_cidr",
            )
            return
        for host in _safe_hosts(rack):
            if host.ipoib_address is None or host.ipoib_address not in cidr:
                yield Finding(
                    path,
                    f"node {host.name} needs an IPoIB address inside {cidr}",
                    "set ipoib_address on each node or node_range.first_ipoib_address",
                )
                break


def _safe_hosts(rack: Rack) -> list[Host]:
    try:
        return rack_hosts(rack)
    except ValueError:
        return []
