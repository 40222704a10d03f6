"""Optional inputs for the cost model; every field has a documented default in gpucluster.cost."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PositiveFloat, PositiveInt

from gpucluster.spec.model_common import Fraction, Strict

Usd = Annotated[float, Field(ge=0)]


class OnPremEconomics(Strict):
    """What owning the racks costs."""

    capex_usd: Usd | None = None  # servers, network, storage, installation
    lifetime_years: Annotated[float, Field(gt=0, le=15)] = 5.0
    electricity_usd_per_kwh: Usd = 0.12
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = 1.4
    staff_usd_per_month: Usd = 7500.0
    maintenance_fraction_per_year: Fraction = 0.08
    colocation_usd_per_month: Usd = 0.0


class Economics(Strict):
    """Inputs for effective $/GPU-hour; all optional."""

    expected_utilization: Fraction = 0.6
    onprem: OnPremEconomics = OnPremEconomics()
    on_demand_usd_per_hour: dict[str, PositiveFloat] = Field(default_factory=dict)
    spot_usd_per_hour: dict[str, PositiveFloat] = Field(default_factory=dict)
    spot_interruptions_per_day: Annotated[float, Field(ge=0)] | None = None
    checkpoint_write_s: PositiveInt | None = None
