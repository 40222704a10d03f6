"""Reference rates beyond on-demand: spot, savings plans, capacity blocks, spot interruption bands.

On-demand list prices live with the instance types in `catalog.py`. The figures here are the other
AWS markets. Where AWS publishes a per-instance rate we could read (capacity blocks) it is stored as
a price; where the rate depends on the day, the account or the zone (spot, savings plans) it is stored
as a reference discount off on-demand, named as such. Every figure carries its source and date, and
every one can be overridden per instance type in the cluster file's `economics` section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gpucluster.clusterfile.catalog.hardware import Source

REFERENCE_REGION: Final = "us-east-1"


@dataclass(frozen=True, kw_only=True)
class Rate:
    """One reference figure with where it came from and what kind of figure it is."""

    value: float
    source: Source
    basis: str  # "list price", "reference discount", "published band", …


@dataclass(frozen=True, kw_only=True)
class InterruptionBand:
    """A Spot Instance Advisor band: share of instances of a type interrupted in a month."""

    label: str
    low_fraction_per_month: float
    high_fraction_per_month: float
    assumed_fraction_per_month: float  # the figure the cost model uses inside the band


_SPOT_ADVISOR: Final = Source(url="https://aws.amazon.com/ec2/spot/instance-advisor/", date="2026-12-02")
_SPOT_PRICING: Final = Source(url="https://aws.amazon.com/ec2/spot/pricing/", date="2026-12-02")
_SAVINGS_PLANS: Final = Source(url="https://aws.amazon.com/savingsplans/faqs/", date="2026-12-02")
# The capacity-block page listed these rates until its scheduled update of 2025-01-01.
_CAPACITY_BLOCKS: Final = Source(url="https://aws.amazon.com/ec2/capacityblocks/pricing/", date="2024-12-31")

INTERRUPTION_BANDS: Final[dict[str, InterruptionBand]] = {
    "<5%": InterruptionBand(
        label="<5%",
        low_fraction_per_month=0.0,
        high_fraction_per_month=0.05,
        assumed_fraction_per_month=0.025,
    ),
    "5-10%": InterruptionBand(
        label="5-10%",
        low_fraction_per_month=0.05,
        high_fraction_per_month=0.10,
        assumed_fraction_per_month=0.075,
    ),
    "10-15%": InterruptionBand(
        label="10-15%",
        low_fraction_per_month=0.10,
        high_fraction_per_month=0.15,
        assumed_fraction_per_month=0.125,
    ),
    "15-20%": InterruptionBand(
        label="15-20%",
        low_fraction_per_month=0.15,
        high_fraction_per_month=0.20,
        assumed_fraction_per_month=0.175,
    ),
    ">20%": InterruptionBand(
        label=">20%",
        low_fraction_per_month=0.20,
        high_fraction_per_month=1.0,
        assumed_fraction_per_month=0.30,
    ),
}

# Reference discounts off on-demand. AWS sells savings plans as an hourly commitment and spot at a
# price that moves with supply; neither has one list price per instance type, so we carry the
# discount and say so. The spot figure sits inside the "up to 90% off" AWS states; the savings-plan
# figures inside the published "up to 72%" (EC2 Instance Savings Plans).
_ASSUMED = "assumed discount off on-demand (the source gives only an upper bound); override it"
SPOT_DISCOUNT: Final = Rate(value=0.60, source=_SPOT_PRICING, basis=_ASSUMED)
SAVINGS_PLAN_1Y_DISCOUNT: Final = Rate(value=0.30, source=_SAVINGS_PLANS, basis=_ASSUMED)
SAVINGS_PLAN_3Y_DISCOUNT: Final = Rate(value=0.50, source=_SAVINGS_PLANS, basis=_ASSUMED)

CAPACITY_BLOCK_USD_PER_HOUR: Final[dict[str, Rate]] = {
    "p5.48xlarge": Rate(value=39.33, source=_CAPACITY_BLOCKS, basis="list price, us-east-1"),
    "p5e.48xlarge": Rate(value=43.26, source=_CAPACITY_BLOCKS, basis="list price, us-east-2"),
    "p4d.24xlarge": Rate(value=14.75, source=_CAPACITY_BLOCKS, basis="list price, us-east-2"),
}

# Assumed Spot Instance Advisor band per instance type (large GPU types are reclaimed often); the
# advisor changes daily, so these are starting points to override, not readings.
SPOT_BAND_BASIS: Final = "assumed band (the advisor changes daily); override with spot_interruptions_per_day"
SPOT_INTERRUPTION_BAND: Final[dict[str, tuple[str, Source]]] = {
    "p5.48xlarge": (">20%", _SPOT_ADVISOR),
    "p5e.48xlarge": (">20%", _SPOT_ADVISOR),
    "p5en.48xlarge": (">20%", _SPOT_ADVISOR),
    "p4d.24xlarge": ("15-20%", _SPOT_ADVISOR),
    "p4de.24xlarge": (">20%", _SPOT_ADVISOR),
}
DEFAULT_INTERRUPTION_BAND: Final = ">20%"
