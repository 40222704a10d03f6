"""What the burst controller knows: /etc/gpucluster/routing.json, rendered from the cluster file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster import names

if TYPE_CHECKING:  # the controller runs without the loader; only rendering reads a Cluster
    from gpucluster.clusterfile.model import Cluster

DEFAULT_PATH = Path(names.ROUTING_CONFIG)


@dataclass(frozen=True, kw_only=True)
class ClassConfig:
    """One job class: what recognises it, its route, the partition it starts in, and its guards."""

    name: str
    accounts: tuple[str, ...]
    qos: tuple[str, ...]
    route: str  # rack, cloud, spot or rack_then_cloud
    first_partition: str  # where job_submit.lua sends it
    after_wait_s: int | None = None  # rack_then_cloud: expected wait that lets it burst
    max_cloud_nodes: int | None = None
    budget_usd_per_month: float | None = None  # budget_share × aws.budget.monthly_limit_usd

    @property
    def bursts(self) -> bool:
        """Whether the controller may widen this class's jobs to the cloud."""
        return self.route == "rack_then_cloud"


@dataclass(frozen=True, kw_only=True)
class PartitionPrice:
    """A cloud partition's price per node-hour (its dearest group) and its idle tail before power-down."""

    usd_per_node_hour: float
    gpus_per_node: int
    idle_s: int


@dataclass(frozen=True, kw_only=True)
class RoutingConfig:
    """The classes, the route partitions, cloud prices and the controller's own settings."""

    cluster: str
    classes: tuple[ClassConfig, ...]
    default_class: str | None
    rack_partition: str
    cloud_partition: str
    spot_partition: str | None
    cloud_boot_s: int  # economics.cloud_boot_minutes: a rack start sooner than this beats a burst
    prices: dict[str, PartitionPrice]  # cloud and spot partitions
    interval_s: int = 60

    def by_name(self, name: str) -> ClassConfig | None:
        """The class of that name, else None."""
        return next((c for c in self.classes if c.name == name), None)

    def to_json(self, comment: str = "") -> str:
        """The file's text; a comment (JSON has none) goes under the ignored key `_comment`."""
        data = {**({"_comment": comment.splitlines()} if comment else {}), **asdict(self)}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def load(path: Path = DEFAULT_PATH) -> RoutingConfig:
    """Read the configuration file."""
    data: dict[str, Any] = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    classes = tuple(
        ClassConfig(**{**c, "accounts": tuple(c["accounts"]), "qos": tuple(c["qos"])})
        for c in data.pop("classes")
    )
    prices = {name: PartitionPrice(**price) for name, price in data.pop("prices").items()}
    return RoutingConfig(**data, classes=classes, prices=prices)


def from_cluster(cluster: Cluster) -> RoutingConfig:
    """The routing configuration of a validated cluster file with a routing section."""
    routing = cluster.routing
    assert routing is not None
    parts = routing.partitions
    first = {"rack": parts.rack, "rack_then_cloud": parts.rack, "cloud": parts.cloud, "spot": parts.spot}
    limit = cluster.aws.budget.monthly_limit_usd if cluster.aws and cluster.aws.budget else None
    classes = tuple(
        ClassConfig(
            name=c.name,
            accounts=tuple(c.accounts),
            qos=tuple(c.qos),
            route=c.route,
            first_partition=first[c.route] or parts.rack,
            after_wait_s=c.after_wait_minutes * 60 if c.after_wait_minutes else None,
            max_cloud_nodes=c.max_cloud_nodes,
            budget_usd_per_month=c.budget_share * limit if c.budget_share is not None and limit else None,
        )
        for c in routing.classes
    )
    return RoutingConfig(
        cluster=cluster.name,
        classes=classes,
        default_class=routing.default_class,
        rack_partition=parts.rack,
        cloud_partition=parts.cloud,
        spot_partition=parts.spot,
        cloud_boot_s=round(cluster.economics.cloud_boot_minutes * 60),
        prices=_prices(cluster, [p for p in (parts.cloud, parts.spot) if p]),
        interval_s=routing.interval_s,
    )


def _prices(cluster: Cluster, partitions: list[str]) -> dict[str, PartitionPrice]:
    # The cost model and the catalog are needed only when rendering, never on the controller.
    from gpucluster.cost.markets import market_price  # noqa: PLC0415

    groups = {g.name: g for g in (cluster.aws.capacity if cluster.aws else [])}
    out: dict[str, PartitionPrice] = {}
    for partition in cluster.slurm.partitions:
        members = [groups[n] for n in partition.node_groups if n in groups]
        if partition.name not in partitions or not members:
            continue
        quotes = []
        for group in members:
            quote = market_price(cluster.economics, group.instance_type, group.market)
            quote = quote or market_price(cluster.economics, group.instance_type, "on-demand")
            assert quote is not None
            quotes.append(quote)
        dearest = max(quotes, key=lambda q: q.usd_per_instance_hour)
        out[partition.name] = PartitionPrice(
            usd_per_node_hour=dearest.usd_per_instance_hour,
            gpus_per_node=dearest.gpu_count,
            idle_s=max(g.idle_minutes for g in members) * 60,
        )
    return out
