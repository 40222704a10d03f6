"""Checkpoint interval and lost-work overhead on interruptible capacity (Young 1974, Daly 2006).

Notation: C = checkpoint write time, M = mean time between interruptions of the *job* (1/λ),
R = restart time (replace the instance, reload the checkpoint), τ = compute time between checkpoints.
First order (Young): each interval pays C, each interruption loses on average τ/2 of work plus R,
so the overhead per unit of useful work is C/τ + (τ/2 + R)/M, minimized at τ = √(2·C·M).
Daly's higher-order estimate minimizes the exact expected wall time of the exponential model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from gpucluster.cost.formulas import HOURS_PER_MONTH

Method = Literal["young", "daly"]
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class CheckpointPlan:
    """The chosen interval and what it costs in overhead, with the inputs that decided it."""

    method: Method
    interval_s: float
    checkpoint_write_s: float
    mtbf_s: float
    restart_s: float
    lost_work_per_interruption_s: float
    checkpoint_overhead_fraction: float  # C / τ
    total_overhead_fraction: float  # extra wall time per unit of useful work


def young_interval_s(checkpoint_write_s: float, mtbf_s: float) -> float:
    """Young's optimum τ = √(2·C·M)."""
    return math.sqrt(2 * checkpoint_write_s * mtbf_s)


def daly_interval_s(checkpoint_write_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum: √(2CM)·[1 + ⅓√(C/2M) + ⅑(C/2M)] − C for C < 2M, else M."""
    if checkpoint_write_s >= 2 * mtbf_s:
        return mtbf_s
    ratio = checkpoint_write_s / (2 * mtbf_s)
    root = math.sqrt(2 * checkpoint_write_s * mtbf_s)
    return root * (1 + math.sqrt(ratio) / 3 + ratio / 9) - checkpoint_write_s


def first_order_overhead(
    interval_s: float, checkpoint_write_s: float, mtbf_s: float, restart_s: float
) -> float:
    """Young's overhead per unit of useful work: C/τ + (τ/2 + R)/M."""
    return checkpoint_write_s / interval_s + (interval_s / 2 + restart_s) / mtbf_s


def exact_overhead(interval_s: float, checkpoint_write_s: float, mtbf_s: float, restart_s: float) -> float:
    """Daly's exact expected wall time per unit of work, less one: M·e^(R/M)·(e^((τ+C)/M) − 1)/τ − 1."""
    exponent = (interval_s + checkpoint_write_s) / mtbf_s
    if exponent > 700:  # e^700 overflows a float; the overhead is unbounded anyway
        return math.inf
    return mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1(exponent) / interval_s - 1


def plan(
    checkpoint_write_s: float, mtbf_s: float, restart_s: float = 0.0, method: Method = "young"
) -> CheckpointPlan:
    """Interval and overhead for one job by Young's (first-order) or Daly's (exact model) rule."""
    if math.isinf(mtbf_s):  # never interrupted: never checkpoint for the sake of interruptions
        return CheckpointPlan(method, math.inf, checkpoint_write_s, mtbf_s, restart_s, 0.0, 0.0, 0.0)
    if method == "daly":
        interval = daly_interval_s(checkpoint_write_s, mtbf_s)
        total = exact_overhead(interval, checkpoint_write_s, mtbf_s, restart_s)
    else:
        interval = young_interval_s(checkpoint_write_s, mtbf_s)
        total = first_order_overhead(interval, checkpoint_write_s, mtbf_s, restart_s)
    return CheckpointPlan(
        method=method,
        interval_s=interval,
        checkpoint_write_s=checkpoint_write_s,
        mtbf_s=mtbf_s,
        restart_s=restart_s,
        lost_work_per_interruption_s=interval / 2 + restart_s,
        checkpoint_overhead_fraction=checkpoint_write_s / interval,
        total_overhead_fraction=total,
    )


def write_time_s(size_gib: float, write_gib_per_s: float) -> float:
    """Time to write one checkpoint of size_gib at write_gib_per_s."""
    return size_gib / write_gib_per_s


def instance_mtbf_s(interrupted_fraction_per_month: float) -> float:
    """Mean time between interruptions of one instance from the share interrupted in a month.

    A share p of instances interrupted within a month means a rate λ = −ln(1 − p) per month.
    """
    if interrupted_fraction_per_month <= 0:
        return math.inf
    if interrupted_fraction_per_month >= 1:
        return HOURS_PER_MONTH * SECONDS_PER_HOUR / 10  # "almost all": ten a month per instance
    rate_per_month = -math.log1p(-interrupted_fraction_per_month)
    return HOURS_PER_MONTH * SECONDS_PER_HOUR / rate_per_month


def job_mtbf_s(instance_mtbf: float, instances: int) -> float:
    """A job spanning n instances stops when any one is reclaimed: M_job = M_instance / n."""
    return instance_mtbf / max(instances, 1)


def mtbf_from_interruptions_per_day(interruptions_per_day: float) -> float:
    """M = 1/λ for a job interrupted λ times a day (infinite when never)."""
    return math.inf if interruptions_per_day <= 0 else SECONDS_PER_DAY / interruptions_per_day
