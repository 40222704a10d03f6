"""A powered cloud group is billed from launch to power-down: busy hours plus boot and idle tail per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.clusterfile import Cluster, load
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.cost.analysis import HOURS_PER_MONTH, build_report, burst_hours
from tests.conftest import ROOT

EXAMPLE = (ROOT / "clusters" / "example.yaml").read_text()


def _cluster(tmp_path: Path, old: str = "", new: str = "") -> Cluster:
    assert old in EXAMPLE
    path = tmp_path / "c.yaml"
    path.write_text(EXAMPLE.replace(old, new, 1))
    return load(path).cluster


def _group(cluster: Cluster, name: str) -> CapacityGroup:
    assert cluster.aws is not None
    return next(g for g in cluster.aws.capacity if g.name == name)


def test_by_hand_four_nodes_at_half_use(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    group = _group(cluster, "p5-od")  # 4 nodes, default 10 idle minutes, 10 boot minutes, 12 h runs
    busy = HOURS_PER_MONTH * 4 * 0.5
    assert burst_hours(cluster, group, 0.5) == pytest.approx(busy * (1 + (20 / 60) / 12))
    assert burst_hours(cluster, group, 0.5) > busy


def test_a_longer_idle_tail_costs_more_and_nothing_runs_more_than_all_month(tmp_path: Path) -> None:
    lazy = _cluster(
        tmp_path, "      market: on-demand\n", "      market: on-demand\n      idle_minutes: 120\n"
    )
    quick = _cluster(tmp_path)
    assert burst_hours(lazy, _group(lazy, "p5-od"), 0.5) > burst_hours(quick, _group(quick, "p5-od"), 0.5)
    assert burst_hours(lazy, _group(lazy, "p5-od"), 0.99) == HOURS_PER_MONTH * 4


def test_static_nodes_run_all_month(tmp_path: Path) -> None:
    cluster = _cluster(
        tmp_path, "      min_count: 0\n      max_count: 4\n", "      min_count: 2\n      max_count: 4\n"
    )
    assert burst_hours(cluster, _group(cluster, "p5-od"), 0.1) == HOURS_PER_MONTH * 2


def test_the_monthly_bill_carries_the_overhead(tmp_path: Path) -> None:
    short_runs = _cluster(tmp_path, "economics:\n", "economics:\n  cloud_run_hours: 1\n")
    long_runs = _cluster(tmp_path, "economics:\n", "economics:\n  cloud_run_hours: 100\n")
    assert build_report(short_runs, "x").monthly_total_usd > build_report(long_runs, "x").monthly_total_usd
