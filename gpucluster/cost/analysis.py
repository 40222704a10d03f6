"""The cost report of one cluster: effective $/GPU-hour per market, break-evens, monthly totals, verdict."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.clusterfile.catalog.prices import REFERENCE_REGION
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.aws import CapacityGroup, Spot
from gpucluster.clusterfile.model.economics import VerdictBands
from gpucluster.cost.checkpoint import CheckpointPlan, Method
from gpucluster.cost.formulas import (
    HOURS_PER_MONTH,
    Curve,
    OnPremMonthly,
    break_even_utilization,
    committed_curve,
    pay_per_use_curve,
)
from gpucluster.cost.inputs import (
    CostInputError,
    InputFigure,
    contract_interval_s,
    onprem_site,
    reference_instance_type,
    spot_plan,
)
from gpucluster.cost.markets import MarketPrice, all_markets, market_price
from gpucluster.cost.recommend import Recommendation, recommend


@dataclass(frozen=True)
class MarketResult:
    """One AWS market: list price, effective curve, cost at u, break-even with on-prem."""

    price: MarketPrice
    curve: Curve
    usd_per_gpu_hour: float  # effective, at the report's utilization
    overhead_fraction: float  # lost work and checkpoints (spot only)
    break_even_utilization: float | None


@dataclass(frozen=True)
class GroupMonthly:
    """What one node group costs in a month at the report's utilization."""

    name: str
    site: str
    market: str
    gpus: int
    usd: float


@dataclass(frozen=True)
class CostReport:
    """Everything `gpucluster cost` prints, as values."""

    cluster: str
    utilization: float
    utilization_source: str
    instance_type: str | None
    onprem: OnPremMonthly | None
    onprem_curve: Curve | None
    markets: list[MarketResult]
    spot: CheckpointPlan | None
    monthly: list[GroupMonthly]
    inputs: list[InputFigure]
    recommendation: Recommendation | None
    notes: list[str]

    @property
    def monthly_total_usd(self) -> float:
        """The month's bill for all declared capacity at the report's utilization."""
        return sum(group.usd for group in self.monthly)


def build_report(
    cluster: Cluster,
    source: str,
    utilization: float | None = None,
    utilization_source: str | None = None,
    method: Method | None = None,
) -> CostReport:
    """Cost a validated cluster at utilization u (default: economics.expected_utilization)."""
    u = cluster.economics.expected_utilization if utilization is None else utilization
    origin = utilization_source or f"{source} economics.expected_utilization"
    if u <= 0:
        raise CostInputError(
            source, "economics.expected_utilization", "must be above 0", "cost needs some use"
        )
    onprem, inputs = onprem_site(cluster, source)
    onprem_curve = onprem.curve() if onprem else None
    instance_type = reference_instance_type(cluster)
    markets: list[MarketResult] = []
    spot: CheckpointPlan | None = None
    if instance_type is not None:
        spot, spot_inputs = spot_plan(cluster, instance_type, method, source)
        inputs += spot_inputs
        for price in all_markets(cluster.economics, instance_type):
            inputs.append(
                InputFigure(
                    f"{price.label} {instance_type}", f"${price.usd_per_instance_hour:.2f}/h", price.source
                )
            )
            markets.append(_market(price, spot, onprem_curve, u))
    inputs.append(InputFigure("utilization", f"{u:.1%}", origin))
    return CostReport(
        cluster=cluster.name,
        utilization=u,
        utilization_source=origin,
        instance_type=instance_type,
        onprem=onprem,
        onprem_curve=onprem_curve,
        markets=markets,
        spot=spot,
        monthly=_monthly(cluster, onprem, u),
        inputs=inputs,
        recommendation=_recommend(onprem_curve, markets, u, cluster.economics.verdict),
        notes=_notes(cluster, markets),
    )


def _market(price: MarketPrice, spot: CheckpointPlan | None, onprem: Curve | None, u: float) -> MarketResult:
    overhead = spot.total_overhead_fraction if price.market == "spot" and spot else 0.0
    if price.committed:
        curve = committed_curve(price.usd_per_gpu_hour)
    else:
        curve = pay_per_use_curve(price.usd_per_gpu_hour, overhead)
    even = break_even_utilization(onprem, curve) if onprem else None
    return MarketResult(price, curve, curve.at(u), overhead, even)


def _recommend(
    onprem: Curve | None, markets: list[MarketResult], u: float, bands: VerdictBands
) -> Recommendation | None:
    steady = [m for m in markets if m.price.market != "spot"]
    if not steady:
        return None
    best = min(steady, key=lambda m: m.usd_per_gpu_hour)
    onprem_cost = onprem.at(u) if onprem else None
    on_demand = next((m for m in markets if m.price.market == "on-demand"), None)
    extra = None
    if on_demand is not None and on_demand is not best and on_demand.break_even_utilization is not None:
        extra = f"on-prem beats on-demand above {on_demand.break_even_utilization:.0%}"
    return recommend(
        u,
        onprem_usd_per_gpu_hour=onprem_cost,
        cloud_market=best.price.label,
        cloud_usd_per_gpu_hour=best.usd_per_gpu_hour,
        break_even_utilization=best.break_even_utilization,
        also=extra,
        bands=bands,
    )


def _monthly(cluster: Cluster, onprem: OnPremMonthly | None, u: float) -> list[GroupMonthly]:
    rows: list[GroupMonthly] = []
    if onprem is not None and cluster.onprem is not None:
        rows.append(GroupMonthly("on-prem racks", "onprem", "owned", onprem.gpu_count, onprem.total_usd(u)))
    for group in cluster.aws.capacity if cluster.aws else []:
        price = market_price(cluster.economics, group.instance_type, group.market)
        if price is None:
            continue
        if group.market == "capacity-block":
            hours = HOURS_PER_MONTH * group.max_count  # the block is paid in full
        else:
            hours = burst_hours(cluster, group, u)
        gpus = price.gpu_count * group.max_count
        rows.append(GroupMonthly(group.name, "aws", group.market, gpus, hours * price.usd_per_instance_hour))
    return rows


def burst_hours(cluster: Cluster, group: CapacityGroup, u: float) -> float:
    """Billed instance-hours a month of a powered group: busy hours, plus per run its boot and idle tail.

    Busy hours are max_count x u x 730; each run of `economics.cloud_run_hours` also pays
    `cloud_boot_minutes` before the node registers and the group's `idle_minutes` before it powers down.
    Static nodes (min_count) are billed around the clock; no group runs more than all month.
    """
    economics = cluster.economics
    busy = HOURS_PER_MONTH * group.max_count * u
    per_run_overhead = (economics.cloud_boot_minutes + group.idle_minutes) / 60
    dynamic = busy * (1 + per_run_overhead / economics.cloud_run_hours)
    return min(HOURS_PER_MONTH * group.max_count, max(dynamic, HOURS_PER_MONTH * group.min_count))


def _notes(cluster: Cluster, markets: list[MarketResult]) -> list[str]:
    notes = [
        "committed markets (savings plan, reserved, capacity block) cost price / u per used GPU-hour;"
        " on-demand and spot are paid only while they run",
        "spot includes checkpoint writes and lost work (τ/2 + restart per interruption)",
    ]
    for group in cluster.aws.capacity if cluster.aws else []:
        interval = contract_interval_s(cluster, group)
        if interval is not None:
            spot = cluster.aws.spot if cluster.aws else Spot()
            notes.append(
                f"jobs on {group.name} are told GPUCLUSTER_CHECKPOINT_INTERVAL_S={interval} (the τ priced"
                f" above) and get SIG{spot.checkpoint_signal} on a notice; still running"
                f" {spot.safety_margin_s} s before the stop, they are requeued"
            )
    if cluster.aws and cluster.aws.capacity:
        economics = cluster.economics
        notes.append(
            f"cloud groups pay per {economics.cloud_run_hours:g} h run {economics.cloud_boot_minutes:g}"
            " min of boot and their idle_minutes before power-down"
            " (economics.cloud_run_hours, cloud_boot_minutes)"
        )
    if cluster.aws and cluster.aws.region != REFERENCE_REGION and markets:
        notes.append(
            f"reference prices are {REFERENCE_REGION}; the cluster runs in {cluster.aws.region}:"
            " override them in economics"
        )
    return notes
