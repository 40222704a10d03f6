"""Effective $/GPU-hour curves, on-prem monthly cost and break-even utilization: pure formulas.

Every curve here has the shape cost(u) = fixed / u + variable, in $ per *used* GPU-hour at
utilization u (0 < u ≤ 1): capacity you pay for whether used or not contributes to `fixed`,
capacity you pay for only while it runs contributes to `variable`. That one shape covers on-prem
(amortized capex, staff, idle power → fixed; the rest of the power → variable), committed AWS
capacity (savings plans, reserved, capacity blocks → fixed) and pay-as-you-go AWS capacity
(on-demand, spot → variable), and it makes every break-even a closed form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

HOURS_PER_MONTH = 730.0  # 8,760 h / 12, the figure AWS bills monthly estimates with
MONTHS_PER_YEAR = 12.0


@dataclass(frozen=True)
class Curve:
    """Effective $ per used GPU-hour as fixed_usd_per_gpu_hour / u + variable_usd_per_gpu_hour."""

    fixed_usd_per_gpu_hour: float
    variable_usd_per_gpu_hour: float

    def at(self, utilization: float) -> float:
        """Effective $ per used GPU-hour at utilization u (infinite at u = 0 if anything is fixed)."""
        if utilization <= 0:
            return float("inf") if self.fixed_usd_per_gpu_hour > 0 else self.variable_usd_per_gpu_hour
        return self.fixed_usd_per_gpu_hour / utilization + self.variable_usd_per_gpu_hour


@dataclass(frozen=True)
class OnPremMonthly:
    """An on-prem site's monthly cost by line, with power at full draw."""

    amortization_usd: float
    maintenance_usd: float
    staff_usd: float
    colocation_usd: float
    power_full_usd: float
    idle_power_fraction: float
    gpu_count: int

    def total_usd(self, utilization: float) -> float:
        """The month's bill at utilization u (power scales between idle and full draw)."""
        share = self.idle_power_fraction + (1 - self.idle_power_fraction) * utilization
        return self.fixed_usd + self.power_full_usd * share

    @property
    def fixed_usd(self) -> float:
        """Everything but power: paid whether the GPUs work or not."""
        return self.amortization_usd + self.maintenance_usd + self.staff_usd + self.colocation_usd

    def curve(self) -> Curve:
        """The site's effective-cost curve per used GPU-hour."""
        gpu_hours = self.gpu_count * HOURS_PER_MONTH
        idle_power = self.power_full_usd * self.idle_power_fraction
        busy_power = self.power_full_usd * (1 - self.idle_power_fraction)
        return Curve((self.fixed_usd + idle_power) / gpu_hours, busy_power / gpu_hours)


def onprem_monthly(
    *,
    capex_usd: float,
    lifetime_years: float,
    maintenance_fraction_per_year: float,
    staff_usd_per_month: float,
    colocation_usd_per_month: float,
    it_power_kw: float,
    pue: float,
    electricity_usd_per_kwh: float,
    idle_power_fraction: float,
    gpu_count: int,
) -> OnPremMonthly:
    """Monthly on-prem cost: straight-line capex, maintenance, staff, colocation, facility power."""
    return OnPremMonthly(
        amortization_usd=capex_usd / (lifetime_years * MONTHS_PER_YEAR),
        maintenance_usd=capex_usd * maintenance_fraction_per_year / MONTHS_PER_YEAR,
        staff_usd=staff_usd_per_month,
        colocation_usd=colocation_usd_per_month,
        power_full_usd=it_power_kw * pue * electricity_usd_per_kwh * HOURS_PER_MONTH,
        idle_power_fraction=idle_power_fraction,
        gpu_count=gpu_count,
    )


def committed_curve(price_usd_per_gpu_hour: float) -> Curve:
    """Capacity paid whether used or not (savings plan, reserved, capacity block): price / u."""
    return Curve(price_usd_per_gpu_hour, 0.0)


def pay_per_use_curve(price_usd_per_gpu_hour: float, overhead_fraction: float = 0.0) -> Curve:
    """Capacity paid only while it runs (on-demand, spot), inflated by lost-work overhead."""
    return Curve(0.0, price_usd_per_gpu_hour * (1 + overhead_fraction))


def break_even_utilization(first: Curve, second: Curve) -> float | None:
    """The utilization in (0, 1] where two curves cost the same, or None if they never meet there.

    Closed form: f1/u + v1 = f2/u + v2  ⇔  u = (f1 − f2) / (v2 − v1).
    """
    fixed_gap = first.fixed_usd_per_gpu_hour - second.fixed_usd_per_gpu_hour
    variable_gap = second.variable_usd_per_gpu_hour - first.variable_usd_per_gpu_hour
    if variable_gap == 0:
        return None
    utilization = fixed_gap / variable_gap
    return utilization if 0 < utilization <= 1 else None


def bracketed_root(
    func: Callable[[float], float], low: float, high: float, tolerance: float = 1e-12
) -> float | None:
    """A root of func in [low, high] by bisection, or None when the ends do not bracket a sign change."""
    f_low, f_high = func(low), func(high)
    if f_low == 0:
        return low
    if f_high == 0:
        return high
    if (f_low > 0) == (f_high > 0):
        return None
    for _ in range(200):
        middle = (low + high) / 2
        f_middle = func(middle)
        if f_middle == 0 or high - low < tolerance:
            return middle
        if (f_middle > 0) == (f_low > 0):
            low, f_low = middle, f_middle
        else:
            high = middle
    return (low + high) / 2
