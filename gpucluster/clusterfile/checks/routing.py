"""Rules of the routing section: classes, the partitions routes name, and what guards need."""

from __future__ import annotations

from collections.abc import Iterator

from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.model import Cluster

_ROUTE_MARKETS = {"rack": ("onprem",), "cloud": ("on-demand", "capacity-block"), "spot": ("spot",)}


def class_names_unique(cluster: Cluster) -> Iterator[Finding]:
    """Each class has its own name; the default class is one of them."""
    if cluster.routing is None:
        return
    seen: set[str] = set()
    for index, job_class in enumerate(cluster.routing.classes):
        if job_class.name in seen:
            yield Finding(
                ("routing", "classes", index, "name"),
                f"class {job_class.name!r} is declared twice",
                "rename or merge them",
            )
        seen.add(job_class.name)
    default = cluster.routing.default_class
    if default is not None and default not in seen:
        yield Finding(
            ("routing", "default_class"),
            f"{default!r} is not a declared class",
            f"use one of {', '.join(sorted(seen))}, or leave it out to leave unrecognised jobs as submitted",
        )


def selectors_unambiguous(cluster: Cluster) -> Iterator[Finding]:
    """An account or QOS recognises one class only, so a job's class never depends on the order."""
    if cluster.routing is None:
        return
    for selector in ("accounts", "qos"):
        owner: dict[str, str] = {}
        for index, job_class in enumerate(cluster.routing.classes):
            for item, word in enumerate(getattr(job_class, selector)):
                if word in owner and owner[word] != job_class.name:
                    yield Finding(
                        ("routing", "classes", index, selector, item),
                        f"{word!r} already recognises class {owner[word]!r}",
                        "name each account and QOS in one class only",
                    )
                owner.setdefault(word, job_class.name)


def _market_of(cluster: Cluster) -> dict[str, str]:
    markets = {r.name: "onprem" for r in (cluster.onprem.racks if cluster.onprem else [])}
    markets |= {g.name: g.market for g in (cluster.aws.capacity if cluster.aws else [])}
    return markets


def route_partitions_fit(cluster: Cluster) -> Iterator[Finding]:
    """Every partition a route uses exists and holds only the capacity its route means."""
    if cluster.routing is None:
        return
    used = {c.route for c in cluster.routing.classes}
    needed = {"rack"} | ({"cloud"} if used & {"cloud", "rack_then_cloud"} else set()) | (used & {"spot"})
    indexes = {p.name: i for i, p in enumerate(cluster.slurm.partitions)}
    markets = _market_of(cluster)
    for target in sorted(needed):
        name = getattr(cluster.routing.partitions, target)
        path = ("routing", "partitions", target)
        if name is None:
            yield Finding(
                path, "a class routes to spot but no spot partition is named", _hint(markets, target)
            )
        elif name not in indexes:
            yield Finding(
                path, f"partition {name!r} is not declared in slurm.partitions", _hint(markets, target)
            )
        else:
            yield from _misfits(cluster, indexes[name], target, markets)


def _misfits(cluster: Cluster, index: int, target: str, markets: dict[str, str]) -> Iterator[Finding]:
    """Node groups of a route's partition that are not its kind of capacity.

    A cloud group of the wrong market is reported at its market (the value a stand-in may have replaced
    after a typo, so such a finding is dropped with it); anything else at the partition's entry.
    """
    partition = cluster.slurm.partitions[index]
    capacity = {g.name: i for i, g in enumerate(cluster.aws.capacity)} if cluster.aws else {}
    for entry, group in enumerate(partition.node_groups):
        market = markets.get(group)
        if market in _ROUTE_MARKETS[target]:
            continue
        if group in capacity and target != "rack":
            yield Finding(
                ("aws", "capacity", capacity[group], "market"),
                f"{group} is {market} capacity in partition {partition.name!r}, routing's {target} partition",
                f"make it market {_ROUTE_MARKETS[target][0]}, or {_hint(markets, target)}",
            )
        else:
            yield Finding(
                ("slurm", "partitions", index, "node_groups", entry),
                f"{group} is {market} capacity in partition {partition.name!r}, routing's {target} partition",
                _hint(markets, target),
            )


def _hint(markets: dict[str, str], target: str) -> str:
    groups = sorted(g for g, m in markets.items() if m in _ROUTE_MARKETS[target])
    kind = {"rack": "racks", "cloud": "on-demand capacity groups", "spot": "spot capacity groups"}[target]
    return f"name a partition of {kind} only ({', '.join(groups) or 'none declared'})"


def budget_share_has_budget(cluster: Cluster) -> Iterator[Finding]:
    """A class's budget share is a share of aws.budget.monthly_limit_usd, which must be declared."""
    if cluster.routing is None or (cluster.aws is not None and cluster.aws.budget is not None):
        return
    for index, job_class in enumerate(cluster.routing.classes):
        if job_class.budget_share is not None:
            yield Finding(
                ("routing", "classes", index, "budget_share"),
                "a budget share needs aws.budget.monthly_limit_usd",
                "declare aws.budget or remove budget_share",
            )
