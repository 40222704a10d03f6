"""Optional inputs for the cost model; every field has a documented default in gpucluster.cost."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.model.common import Fraction, Strict

Usd = Annotated[float, Field(ge=0)]
PricesByType = dict[str, PositiveFloat]


class OnPremEconomics(Strict):
    """What owning the racks costs."""

    capex_usd: Usd | None = None  # servers, network, storage, installation
    lifetime_years: Annotated[float, Field(gt=0, le=15)] = 5.0
    electricity_usd_per_kwh: Usd = 0.12
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = 1.4
    staff_usd_per_month: Usd = 7500.0
    maintenance_fraction_per_year: Fraction = 0.08
    colocation_usd_per_month: Usd = 0.0
    # Share of the profile's power_kw drawn when idle; 1.0 bills full power around the clock.
    idle_power_fraction: Fraction = 1.0


class VerdictBands(Strict):
    """The field guides' utilization rule: below cloud_below go cloud, above onprem_above on-prem."""

    cloud_below: Fraction = Field(
        default=0.5,
        description="Measured utilization below this share says cloud (the guides: under 50%).",
    )
    onprem_above: Fraction = Field(
        default=0.75,
        description="Measured utilization above this share says on-prem; between the two, hybrid.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> VerdictBands:
        if self.cloud_below >= self.onprem_above:
            raise ValueError(
                f"cloud_below ({self.cloud_below:g}) must be below onprem_above ({self.onprem_above:g});"
                " lower cloud_below or raise onprem_above (the guides use 0.5 and 0.75)"
            )
        return self


class Economics(Strict):
    """Inputs for effective $/GPU-hour; all optional."""

    expected_utilization: Fraction = 0.6
    onprem: OnPremEconomics = OnPremEconomics()
    on_demand_usd_per_hour: PricesByType = Field(default_factory=dict)
    spot_usd_per_hour: PricesByType = Field(default_factory=dict)
    savings_plan_1y_usd_per_hour: PricesByType = Field(default_factory=dict)
    savings_plan_3y_usd_per_hour: PricesByType = Field(default_factory=dict)
    capacity_block_usd_per_hour: PricesByType = Field(default_factory=dict)
    spot_interruptions_per_day: Annotated[float, Field(ge=0)] | None = None  # per training job
    checkpoint_write_s: PositiveInt | None = None
    restart_s: PositiveInt | None = None  # replace an instance, reload the last checkpoint
    checkpoint_interval_method: Literal["young", "daly"] = "young"
    # Burst overhead: every cloud run is billed from launch to power-down, not only while its job runs.
    cloud_run_hours: PositiveFloat = 12.0  # a powered-up cloud node's mean run of back-to-back jobs
    cloud_boot_minutes: Annotated[float, Field(ge=0)] = 10.0  # billed from launch until slurmd registers
    # The bands the verdict applies to a measured utilization (docs/utilization.md says which figure).
    verdict: VerdictBands = VerdictBands()

    @field_validator(
        "savings_plan_1y_usd_per_hour", "savings_plan_3y_usd_per_hour", "capacity_block_usd_per_hour"
    )
    @classmethod
    def _known_types(cls, prices: PricesByType) -> PricesByType:
        unknown = sorted(set(prices) - set(INSTANCE_TYPES))
        if unknown:
            raise ValueError(
                f"unknown instance type(s) {', '.join(unknown)}; use {', '.join(INSTANCE_TYPES)}"
            )
        return prices
