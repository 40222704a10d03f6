"""A small routing configuration whose figures are easy to follow by hand."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest

from gpucluster.routing.config import ClassConfig, PartitionPrice, RoutingConfig


def at(hh_mm: str, day: int = 2) -> float:
    """Epoch seconds of 2026-11-<day> hh:mm in this host's zone (as squeue's local times are read)."""
    hours, minutes = (int(part) for part in hh_mm.split(":"))
    return datetime(2026, 11, day, hours, minutes).timestamp()


@pytest.fixture
def config() -> RoutingConfig:
    """exp bursts after 90 min (cap 4 nodes, $1000 a month), train stays, eval goes to spot; boot 10 min."""
    return RoutingConfig(
        cluster="t",
        classes=(
            ClassConfig(name="train", accounts=("training",), qos=(), route="rack", first_partition="rack"),
            ClassConfig(
                name="exp",
                accounts=("research",),
                qos=(),
                route="rack_then_cloud",
                first_partition="rack",
                after_wait_s=5400,
                max_cloud_nodes=4,
                budget_usd_per_month=1000.0,
            ),
            ClassConfig(
                name="eval", accounts=("evals",), qos=("eval",), route="spot", first_partition="spot"
            ),
        ),
        default_class=None,
        rack_partition="rack",
        cloud_partition="od",
        spot_partition="spot",
        cloud_boot_s=600,
        prices={
            "od": PartitionPrice(usd_per_node_hour=10.0, gpus_per_node=8, idle_s=600),
            "spot": PartitionPrice(usd_per_node_hour=4.0, gpus_per_node=8, idle_s=600),
        },
        interval_s=60,
    )


def without_budgets(config: RoutingConfig) -> RoutingConfig:
    """The same configuration with no class budget (so a pass needs no sacct)."""
    classes = tuple(dataclasses.replace(c, budget_usd_per_month=None) for c in config.classes)
    return dataclasses.replace(config, classes=classes)
