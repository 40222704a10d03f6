"""AWS prices per market for one instance type: cluster-file override, else catalog, with the source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES, Source
from gpucluster.clusterfile.catalog.prices import (
    CAPACITY_BLOCK_USD_PER_HOUR,
    SAVINGS_PLAN_1Y_DISCOUNT,
    SAVINGS_PLAN_3Y_DISCOUNT,
    SPOT_DISCOUNT,
    Rate,
)
from gpucluster.clusterfile.model.economics import Economics

MarketKey = Literal["on-demand", "savings-plan-1y", "savings-plan-3y", "capacity-block", "spot"]
MARKET_LABELS: dict[MarketKey, str] = {
    "on-demand": "on-demand",
    "savings-plan-1y": "savings plan / reserved 1y",
    "savings-plan-3y": "savings plan / reserved 3y",
    "capacity-block": "capacity block",
    "spot": "spot",
}
COMMITTED: frozenset[MarketKey] = frozenset({"savings-plan-1y", "savings-plan-3y", "capacity-block"})
_OVERRIDE_FIELD: dict[MarketKey, str] = {
    "on-demand": "on_demand_usd_per_hour",
    "savings-plan-1y": "savings_plan_1y_usd_per_hour",
    "savings-plan-3y": "savings_plan_3y_usd_per_hour",
    "capacity-block": "capacity_block_usd_per_hour",
    "spot": "spot_usd_per_hour",
}
_DISCOUNTS: dict[MarketKey, Rate] = {
    "savings-plan-1y": SAVINGS_PLAN_1Y_DISCOUNT,
    "savings-plan-3y": SAVINGS_PLAN_3Y_DISCOUNT,
    "spot": SPOT_DISCOUNT,
}


@dataclass(frozen=True)
class MarketPrice:
    """One market's price for one instance type, and where the figure came from."""

    market: MarketKey
    instance_type: str
    usd_per_instance_hour: float
    gpu_count: int
    source: str

    @property
    def label(self) -> str:
        """Human name of the market."""
        return MARKET_LABELS[self.market]

    @property
    def committed(self) -> bool:
        """Paid whether used or not."""
        return self.market in COMMITTED

    @property
    def usd_per_gpu_hour(self) -> float:
        """List price per GPU-hour, before utilization or lost work."""
        return self.usd_per_instance_hour / self.gpu_count


def cite(source: Source) -> str:
    """A source as one short string: URL (date)."""
    return f"{source.url} ({source.date})"


def market_price(economics: Economics, instance_type: str, market: MarketKey) -> MarketPrice | None:
    """The price of one market: the cluster file's override, else the reference figure, else None."""
    itype = INSTANCE_TYPES[instance_type]
    field = _OVERRIDE_FIELD[market]
    overrides: dict[str, float] = getattr(economics, field)
    if instance_type in overrides:
        source = f"cluster file economics.{field}.{instance_type}"
        return MarketPrice(market, instance_type, overrides[instance_type], itype.gpu_count, source)
    on_demand = market_price(economics, instance_type, "on-demand") if market != "on-demand" else None
    if market == "on-demand":
        price, source = itype.on_demand_usd_per_hour, f"catalog, us-east-1 list: {cite(itype.price_source)}"
    elif market == "capacity-block":
        rate = CAPACITY_BLOCK_USD_PER_HOUR.get(instance_type)
        if rate is None:
            return None
        price, source = rate.value, f"{rate.basis}: {cite(rate.source)}"
    else:
        assert on_demand is not None
        rate = _DISCOUNTS[market]
        price = on_demand.usd_per_instance_hour * (1 - rate.value)
        source = f"on-demand × (1 − {rate.value:.0%}), {rate.basis}: {cite(rate.source)}"
    return MarketPrice(market, instance_type, price, itype.gpu_count, source)


def all_markets(economics: Economics, instance_type: str) -> list[MarketPrice]:
    """Every market with a price for the instance type, in MARKET_LABELS order."""
    found = (market_price(economics, instance_type, market) for market in MARKET_LABELS)
    return [price for price in found if price is not None]
