"""Rules that span the whole cluster: names, addresses, Slurm roles and partitions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from ipaddress import IPv4Address

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.findings import Finding, Path, dotted
from gpucluster.clusterfile.hostlist import expand
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import cloud_variants


def has_some_capacity(cluster: Cluster) -> Iterator[Finding]:
    """A cluster needs racks or capacity groups."""
    racks = cluster.onprem.racks if cluster.onprem else []
    capacity = cluster.aws.capacity if cluster.aws else []
    if not racks and not capacity:
        yield Finding((), "the cluster declares no GPU nodes", "add onprem.racks or aws.capacity")


def _group_names(cluster: Cluster) -> list[tuple[Path, str]]:
    names: list[tuple[Path, str]] = []
    if cluster.onprem:
        names += [(("onprem", "racks", i, "name"), r.name) for i, r in enumerate(cluster.onprem.racks)]
    if cluster.aws:
        names += [(("aws", "capacity", i, "name"), g.name) for i, g in enumerate(cluster.aws.capacity)]
    return names


def _hosts(cluster: Cluster) -> list[tuple[Path, str, IPv4Address | None]]:
    """Every declared host with the path that declares it (ranges expanded)."""
    hosts: list[tuple[Path, str, IPv4Address | None]] = []
    if cluster.onprem:
        for i, service in enumerate(cluster.onprem.service_hosts):
            hosts.append((("onprem", "service_hosts", i, "name"), service.name, service.address))
        for r, rack in enumerate(cluster.onprem.racks):
            for n, node in enumerate(rack.nodes):
                hosts.append((("onprem", "racks", r, "nodes", n, "name"), node.name, node.address))
            if rack.node_range is not None:
                hosts += _range_hosts(
                    ("onprem", "racks", r, "node_range", "pattern"),
                    rack.node_range.pattern,
                    rack.node_range.first_address,
                )
    if cluster.aws:
        if cluster.aws.head_node:
            head = cluster.aws.head_node
            hosts.append((("aws", "head_node", "name"), head.name, head.address))
        for g, group in enumerate(cluster.aws.capacity):
            hosts += [
                (("aws", "capacity", g, "name"), n, None) for v in cloud_variants(group) for n in v.names
            ]
    return hosts


def _range_hosts(path: Path, pattern: str, first: IPv4Address) -> list[tuple[Path, str, IPv4Address | None]]:
    try:
        names = expand(pattern)
    except ValueError:
        return []
    top = int(IPv4Address("255.255.255.255"))
    return [
        (path, n, IPv4Address(int(first) + i) if int(first) + i <= top else None) for i, n in enumerate(names)
    ]


def node_group_names_unique(cluster: Cluster) -> Iterator[Finding]:
    """Rack and capacity-group names share one namespace (Slurm partitions name them)."""
    counts = Counter(name for _, name in _group_names(cluster))
    for path, name in _group_names(cluster):
        if counts[name] > 1:
            yield Finding(
                path,
                f"node group name {name!r} is used more than once",
                "give every rack and capacity group its own name",
            )


def host_names_unique(cluster: Cluster) -> Iterator[Finding]:
    """Host names must be unique across service hosts, racks and cloud nodes."""
    first: dict[str, Path] = {}
    for path, name, _ in _hosts(cluster):
        if name in first:
            yield Finding(
                path,
                f"host name {name!r} is already declared at {dotted(first[name])}",
                "rename one of them (cloud nodes are named <group>-<n>, and <group>-<gpu type>-<n> for "
                "the other models of a mixed_gpus group)",
            )
        else:
            first[name] = path


def host_addresses_unique(cluster: Cluster) -> Iterator[Finding]:
    """Management addresses must be unique."""
    first: dict[IPv4Address, str] = {}
    for path, name, address in _hosts(cluster):
        if address is None:
            continue
        if address in first:
            at = (*path[:-1], "address") if path[-1] == "name" else path
            yield Finding(
                at,
                f"address {address} of {name!r} is already used by {first[address]!r}",
                "give every host its own management address",
            )
        else:
            first[address] = name


def _declared_hosts(cluster: Cluster) -> set[str]:
    return {name for _, name, _ in _hosts(cluster)}


def controller_is_declared_host(cluster: Cluster) -> Iterator[Finding]:
    """The Slurm controller must be a declared host (on-prem service host or the cloud head node)."""
    if cluster.slurm.controller not in _declared_hosts(cluster):
        yield Finding(
            ("slurm", "controller"),
            f"{cluster.slurm.controller!r} is not a declared host",
            "declare it under onprem.service_hosts (or aws.head_node)",
        )


def accounting_host_declared(cluster: Cluster) -> Iterator[Finding]:
    """The accounting host, when given, must be declared; accounting off is worth a warning."""
    accounting = cluster.slurm.accounting
    if accounting.host is not None and accounting.host not in _declared_hosts(cluster):
        yield Finding(
            ("slurm", "accounting", "host"),
            f"{accounting.host!r} is not a declared host",
            "declare it under onprem.service_hosts or leave it out to use the controller",
        )
    if not accounting.enabled:
        yield Finding(
            ("slurm", "accounting", "enabled"),
            "accounting is off",
            "without slurmdbd there is no sacct history for utilization and cost",
            level="warning",
        )


def partition_names_unique(cluster: Cluster) -> Iterator[Finding]:
    """Partition names must be unique."""
    counts = Counter(p.name for p in cluster.slurm.partitions)
    for index, partition in enumerate(cluster.slurm.partitions):
        if counts[partition.name] > 1:
            yield Finding(
                ("slurm", "partitions", index, "name"),
                f"partition {partition.name!r} is declared twice",
                "rename or merge them",
            )


def partitions_name_known_groups(cluster: Cluster) -> Iterator[Finding]:
    """A partition may only name declared racks and capacity groups."""
    known = {name for _, name in _group_names(cluster)}
    for p_index, partition in enumerate(cluster.slurm.partitions):
        for g_index, group in enumerate(partition.node_groups):
            if group not in known:
                yield Finding(
                    ("slurm", "partitions", p_index, "node_groups", g_index),
                    f"unknown node group {group!r}",
                    f"use a rack or capacity group name: {', '.join(sorted(known)) or 'none declared'}",
                )


def at_most_one_default_partition(cluster: Cluster) -> Iterator[Finding]:
    """Slurm takes one default partition."""
    defaults = [i for i, p in enumerate(cluster.slurm.partitions) if p.default]
    for index in defaults[1:]:
        yield Finding(
            ("slurm", "partitions", index, "default"),
            "a second default partition",
            "mark exactly one partition `default: true`",
        )


def economics_prices_name_known_types(cluster: Cluster) -> Iterator[Finding]:
    """Price overrides must name catalog instance types."""
    for field in ("on_demand_usd_per_hour", "spot_usd_per_hour"):
        for name in getattr(cluster.economics, field):
            if name not in INSTANCE_TYPES:
                yield Finding(
                    ("economics", field, name),
                    f"unknown instance type {name!r}",
                    f"use one of {', '.join(INSTANCE_TYPES)}",
                )
