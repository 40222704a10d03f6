"""Cost formulas against hand-computed cases, and the properties they must keep for any input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.cost.checkpoint import (
    daly_interval_s,
    exact_overhead,
    first_order_overhead,
    instance_mtbf_s,
    job_mtbf_s,
    mtbf_from_interruptions_per_day,
    plan,
    young_interval_s,
)
from gpucluster.cost.formulas import (
    Curve,
    OnPremMonthly,
    bracketed_root,
    break_even_utilization,
    committed_curve,
    onprem_monthly,
    pay_per_use_curve,
)

FEW = settings(max_examples=60, deadline=None)


def _example_site(idle_power_fraction: float = 1.0) -> OnPremMonthly:
    # clusters/example.yaml: 8 DGX H100 (10.2 kW each), $3.2M over 5 years, 8%/year maintenance.
    return onprem_monthly(
        capex_usd=3_200_000,
        lifetime_years=5,
        maintenance_fraction_per_year=0.08,
        staff_usd_per_month=15_000,
        colocation_usd_per_month=0,
        it_power_kw=8 * 10.2,
        pue=1.4,
        electricity_usd_per_kwh=0.12,
        idle_power_fraction=idle_power_fraction,
        gpu_count=64,
    )


def test_onprem_monthly_by_hand() -> None:
    site = _example_site()
    assert site.amortization_usd == pytest.approx(3_200_000 / 60)  # 53,333.33
    assert site.maintenance_usd == pytest.approx(3_200_000 * 0.08 / 12)  # 21,333.33
    assert site.power_full_usd == pytest.approx(81.6 * 1.4 * 0.12 * 730)  # 10,007.42
    assert site.total_usd(0.6) == pytest.approx(99_674.09, abs=0.01)
    assert site.curve().at(1.0) == pytest.approx(99_674.09 / (64 * 730), abs=1e-4)  # 2.1335
    assert site.curve().at(0.6) == pytest.approx(99_674.09 / (64 * 730 * 0.6), abs=1e-4)  # 3.5558


def test_idle_power_fraction_moves_power_to_the_variable_part() -> None:
    site = _example_site(idle_power_fraction=0.25)
    curve = site.curve()
    assert curve.variable_usd_per_gpu_hour == pytest.approx(10_007.42 * 0.75 / (64 * 730), abs=1e-4)
    assert site.total_usd(0.5) == pytest.approx(89_666.67 + 10_007.42 * (0.25 + 0.75 * 0.5), abs=0.01)


def test_committed_and_pay_per_use_curves() -> None:
    assert committed_curve(4.0).at(0.5) == 8.0
    assert committed_curve(4.0).at(0.0) == math.inf
    assert pay_per_use_curve(4.0).at(0.1) == 4.0
    assert pay_per_use_curve(4.0, overhead_fraction=0.25).at(0.7) == 5.0


def test_break_even_closed_form_by_hand() -> None:
    onprem = Curve(2.0, 0.0)
    assert break_even_utilization(onprem, pay_per_use_curve(5.0)) == pytest.approx(0.4)
    assert break_even_utilization(onprem, committed_curve(3.0)) is None  # both ∝ 1/u: never meet
    assert break_even_utilization(onprem, pay_per_use_curve(1.5)) is None  # would need u > 1
    # 2/u + 1 = 2.5/u  ⇔  u = 0.5: part of the on-prem power follows the load, a commitment does not.
    assert break_even_utilization(Curve(2.0, 1.0), committed_curve(2.5)) == pytest.approx(0.5)


def test_young_and_daly_by_hand() -> None:
    checkpoint_s, mtbf_s = 120.0, 86_400.0
    assert young_interval_s(checkpoint_s, mtbf_s) == pytest.approx(math.sqrt(20_736_000))  # 4553.68 s
    ratio = 120 / 172_800
    expected = math.sqrt(20_736_000) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - 120
    assert daly_interval_s(checkpoint_s, mtbf_s) == pytest.approx(expected)  # 4474.0 s
    assert daly_interval_s(500.0, 200.0) == 200.0  # C ≥ 2M: checkpoint once per MTBF


def test_plan_reports_lost_work_and_overheads() -> None:
    result = plan(100.0, 86_400.0, restart_s=600.0)
    tau = math.sqrt(2 * 100 * 86_400)  # 4156.9 s
    assert result.interval_s == pytest.approx(tau)
    assert result.lost_work_per_interruption_s == pytest.approx(tau / 2 + 600)
    assert result.checkpoint_overhead_fraction == pytest.approx(100 / tau)
    assert result.total_overhead_fraction == pytest.approx(100 / tau + (tau / 2 + 600) / 86_400)
    assert plan(100.0, math.inf).total_overhead_fraction == 0.0


def test_interruption_rates() -> None:
    assert instance_mtbf_s(0.3) == pytest.approx(730 * 3600 / -math.log(0.7))
    assert job_mtbf_s(8000.0, 8) == 1000.0
    assert mtbf_from_interruptions_per_day(2) == 43_200.0
    assert mtbf_from_interruptions_per_day(0) == math.inf


def test_bracketed_root_without_sign_change_is_none() -> None:
    assert bracketed_root(lambda u: u + 1, 0.0, 1.0) is None
    assert bracketed_root(lambda u: u - 0.25, 0.0, 1.0) == pytest.approx(0.25)


usd = st.floats(min_value=0.0, max_value=5e6, allow_nan=False)


@FEW
@given(
    capex=st.floats(min_value=1.0, max_value=5e7),
    staff=usd,
    idle=st.floats(min_value=0.0, max_value=1.0),
    u1=st.floats(min_value=0.01, max_value=1.0),
    u2=st.floats(min_value=0.01, max_value=1.0),
)
def test_onprem_cost_per_gpu_hour_falls_with_utilization(
    capex: float, staff: float, idle: float, u1: float, u2: float
) -> None:
    site = onprem_monthly(
        capex_usd=capex,
        lifetime_years=5,
        maintenance_fraction_per_year=0.05,
        staff_usd_per_month=staff,
        colocation_usd_per_month=0,
        it_power_kw=40,
        pue=1.3,
        electricity_usd_per_kwh=0.1,
        idle_power_fraction=idle,
        gpu_count=32,
    )
    low, high = sorted((u1, u2))
    if low < high:
        assert site.curve().at(low) > site.curve().at(high)


@FEW
@given(
    fixed=st.floats(min_value=0.01, max_value=50.0),
    variable=st.floats(min_value=0.0, max_value=5.0),
    price=st.floats(min_value=0.1, max_value=50.0),
    committed=st.booleans(),
)
def test_both_sides_agree_within_a_cent_at_break_even(
    fixed: float, variable: float, price: float, committed: bool
) -> None:
    onprem = Curve(fixed, variable)
    cloud = committed_curve(price) if committed else pay_per_use_curve(price)
    even = break_even_utilization(onprem, cloud)
    if even is not None:
        assert 0 < even <= 1
        assert abs(onprem.at(even) - cloud.at(even)) < 0.01
        root = bracketed_root(lambda u: onprem.at(u) - cloud.at(u), 1e-9, 1.0)
        assert root is not None and abs(onprem.at(root) - cloud.at(root)) < 0.01


@FEW
@given(
    checkpoint_s=st.floats(min_value=1.0, max_value=900.0),
    mtbf_s=st.floats(min_value=3600.0, max_value=1e7),
    restart_s=st.floats(min_value=0.0, max_value=1800.0),
)
def test_young_interval_minimizes_first_order_overhead(
    checkpoint_s: float, mtbf_s: float, restart_s: float
) -> None:
    best = young_interval_s(checkpoint_s, mtbf_s)
    at_best = first_order_overhead(best, checkpoint_s, mtbf_s, restart_s)
    for step in range(1, 200):
        tau = best * (0.05 + step * 0.1)  # 0.15·τ* … 19.95·τ*
        assert at_best <= first_order_overhead(tau, checkpoint_s, mtbf_s, restart_s) + 1e-12


@FEW
@given(
    checkpoint_s=st.floats(min_value=1.0, max_value=900.0),
    mtbf_s=st.floats(min_value=3600.0, max_value=1e6),
    restart_s=st.floats(min_value=0.0, max_value=1800.0),
)
def test_daly_interval_is_near_the_exact_minimum(
    checkpoint_s: float, mtbf_s: float, restart_s: float
) -> None:
    daly = daly_interval_s(checkpoint_s, mtbf_s)
    at_daly = exact_overhead(daly, checkpoint_s, mtbf_s, restart_s)
    young = young_interval_s(checkpoint_s, mtbf_s)
    grid = [young * (0.2 + step * 0.01) for step in range(300)]
    brute = min(exact_overhead(tau, checkpoint_s, mtbf_s, restart_s) for tau in grid)
    assert at_daly <= brute * (1 + 1e-3) + 1e-9
    assert at_daly <= exact_overhead(young, checkpoint_s, mtbf_s, restart_s) + 1e-9
