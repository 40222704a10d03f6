"""GPU-hours from synthetic engine-active series, checked against answers known by construction."""

from __future__ import annotations

import pytest

from gpucluster.utilization.measure import measure
from gpucluster.utilization.series import Series
from tests.utilization.synthetic import HOUR_S, START_S, STEP_S, flat, gpu_labels

END_S = START_S + 10 * HOUR_S


def _two_gpus() -> list[Series]:
    """GPU 0: job 41 holds it the first 5 h at 80% engine active, then idle; GPU 1: idle, never allocated."""
    return [
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 0, job="41"), START_S, START_S + 5 * HOUR_S, 0.8),
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 0), START_S + 5 * HOUR_S, END_S, 0.0),
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 1), START_S, END_S, 0.0),
    ]


def test_two_gpus_one_allocated_half_the_window_at_80_percent() -> None:
    m = measure(_two_gpus(), START_S, END_S, STEP_S)
    (group,) = m.groups
    assert (group.site, group.node_group, group.gpus) == ("rack", "rack-a", 2)
    assert group.available_gpu_hours == pytest.approx(20.0)
    assert group.allocated_gpu_hours == pytest.approx(5.0)
    assert group.active_gpu_hours == pytest.approx(4.0)
    assert group.idle_allocated_gpu_hours == pytest.approx(1.0)
    assert (group.allocation, group.activity, group.active_of_allocated) == pytest.approx((0.25, 0.2, 0.8))
    assert m.overall.available_gpu_hours == pytest.approx(20.0) and m.site("rack") is not None


def test_missing_scrapes_are_not_available_time() -> None:
    """GPU 1 unscraped for 2 h (node down): 18 GPU-hours available, the active hours unchanged."""
    series = _two_gpus()
    gappy = Series(
        series[2].labels,
        tuple(p for p in series[2].points if not START_S + 2 * HOUR_S <= p[0] < START_S + 4 * HOUR_S),
    )
    m = measure([*series[:2], gappy], START_S, END_S, STEP_S)
    assert m.overall.available_gpu_hours == pytest.approx(18.0)
    assert m.overall.active_gpu_hours == pytest.approx(4.0)
    assert m.overall.activity == pytest.approx(4 / 18)


def test_two_jobs_sharing_a_gpu_count_it_once() -> None:
    """dcgm-exporter writes one series per job in a GPU's mapping file: one GPU-hour, not two."""
    series = [
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 0, job="7"), START_S, START_S + HOUR_S, 0.5),
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 0, job="8"), START_S, START_S + HOUR_S, 0.5),
    ]
    m = measure(series, START_S, START_S + HOUR_S, STEP_S)
    assert (m.overall.gpus, m.overall.allocated_gpu_hours, m.overall.active_gpu_hours) == pytest.approx(
        (1, 1.0, 0.5)
    )


def test_sites_groups_and_the_overall_row() -> None:
    """A rack GPU busy all window at 60%; a cloud GPU up 2 of the 10 h, allocated, at 90%."""
    series = [
        flat(gpu_labels("rack", "rack-a", "gpu-a01", 0, job="1"), START_S, END_S, 0.6),
        flat(gpu_labels("cloud", "p5-od", "p5-od-1", 0, job="2"), START_S, START_S + 2 * HOUR_S, 0.9),
    ]
    m = measure(series, START_S, END_S, STEP_S)
    assert [(f.site, f.node_group) for f in m.groups] == [("rack", "rack-a"), ("cloud", "p5-od")]
    rack, cloud = m.sites
    assert (rack.available_gpu_hours, rack.activity) == pytest.approx((10.0, 0.6))
    assert (cloud.available_gpu_hours, cloud.active_gpu_hours) == pytest.approx((2.0, 1.8))
    assert m.overall.activity == pytest.approx((6.0 + 1.8) / 12)


def test_points_outside_the_window_and_out_of_range_values() -> None:
    labels = gpu_labels("rack", "rack-a", "gpu-a01", 0)
    series = [
        Series(labels, ((START_S - STEP_S, 1.0), (START_S, 1.7), (START_S + STEP_S, -0.2), (END_S, 1.0)))
    ]
    m = measure(series, START_S, END_S, STEP_S)
    assert m.overall.available_gpu_hours == pytest.approx(2 * STEP_S / HOUR_S)
    assert m.overall.active_gpu_hours == pytest.approx(STEP_S / HOUR_S)  # 1.7 clipped to 1, -0.2 to 0


def test_daily_split_at_utc_midnight() -> None:
    """From 22:00 to 02:00 at full activity: 2 h on each day."""
    first = START_S + 22 * HOUR_S
    series = [flat(gpu_labels("rack", "rack-a", "gpu-a01", 0, job="5"), first, first + 4 * HOUR_S, 1.0)]
    m = measure(series, first, first + 4 * HOUR_S, STEP_S)
    days = m.daily["rack"]
    assert [d.active_gpu_hours for d in days] == pytest.approx([2.0, 2.0])
    assert (days[1].day - days[0].day).days == 1


def test_unlabelled_series_are_kept_apart() -> None:
    series = [Series({"gpu": "0", "Hostname": "x"}, ((START_S, 0.5),))]
    m = measure(series, START_S, END_S, STEP_S)
    assert [f.site for f in m.sites] == ["unlabelled"]
