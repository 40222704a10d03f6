"""What the controller's Prometheus files need: targets, labels, alert limits and the disk it may use.

Rack nodes are static targets (their declared management addresses) labelled site=rack and their
node group; cloud nodes come and go through file_sd files in PROMETHEUS_CLOUD_TARGETS, so a powered-down
cloud node is no target and raises no alert. Every target is scraped twice: node exporter (:9100) and
dcgm-exporter (:9400).

Disk: Prometheus needs about retention × samples per second × bytes per sample
(https://prometheus.io/docs/prometheus/latest/storage/#operational-aspects, 1-2 bytes per sample);
we take 2 bytes, every node of every group up, and half as much again for compaction headroom, and
pass it as --storage.tsdb.retention.size so a larger cluster than estimated loses old data, not the disk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.names import PROMETHEUS_CLOUD_TARGETS, PROMETHEUS_RULES

NODE_EXPORTER_PORT: Final = 9100
DCGM_EXPORTER_PORT: Final = 9400
NODE_EXPORTER_SERIES: Final = 1500  # a node exporter with its default collectors on a large server
DCGM_SERIES_PER_GPU: Final = 40  # the fields the exporter is configured with, one series each per GPU
BYTES_PER_SAMPLE: Final = 2.0
HEADROOM: Final = 1.5
RACK_DOWN_MINUTES: Final = 5
IDLE_BELOW: Final = 0.05  # engine active under 5% …
IDLE_MINUTES: Final = 30  # … for 30 minutes while a job holds the GPU
BURST_CAP_MINUTES: Final = 10


@dataclass(frozen=True)
class Target:
    """One rack node to scrape: its Slurm name, address and node group."""

    node: str
    address: str
    node_group: str


@dataclass(frozen=True)
class CloudGroup:
    """A cloud capacity group: its cap and how long a launched node may take to register."""

    name: str
    max_nodes: int
    resume_timeout_s: int


@dataclass(frozen=True)
class MonitoringContext:
    """Everything templates/monitoring/ renders from."""

    scrape_interval_s: int
    retention_days: int
    retention_size_gib: int
    series: int
    rack_targets: tuple[Target, ...]
    cloud_groups: tuple[CloudGroup, ...]
    cloud_targets_dir: str
    rules_path: str
    node_exporter_port: int = NODE_EXPORTER_PORT
    dcgm_exporter_port: int = DCGM_EXPORTER_PORT
    rack_down_minutes: int = RACK_DOWN_MINUTES
    idle_below: float = IDLE_BELOW
    idle_minutes: int = IDLE_MINUTES
    burst_cap_minutes: int = BURST_CAP_MINUTES


def series_estimate(cluster: Cluster) -> int:
    """Active series with every node of every group up: node exporter per node, DCGM fields per GPU."""
    return sum(
        g.max_nodes * (NODE_EXPORTER_SERIES + g.gpu_count * DCGM_SERIES_PER_GPU) for g in node_groups(cluster)
    )


def retention_size_gib(series: int, scrape_interval_s: int, retention_days: int) -> int:
    """GiB of blocks to allow: samples over the retention × bytes per sample × headroom, at least 1."""
    samples = series / scrape_interval_s * retention_days * 86400
    return max(1, math.ceil(samples * BYTES_PER_SAMPLE * HEADROOM / 2**30))


def monitoring_context(cluster: Cluster) -> MonitoringContext:
    """The values of the controller's Prometheus files, from the cluster file alone."""
    groups = node_groups(cluster)
    rack = tuple(
        Target(node.name, str(node.address), g.name) for g in groups if g.site == "onprem" for node in g.nodes
    )
    timeouts = {c.name: c.resume_timeout_s for c in (cluster.aws.capacity if cluster.aws else [])}
    cloud = tuple(CloudGroup(g.name, g.max_nodes, timeouts[g.name]) for g in groups if g.site == "aws")
    settings = cluster.monitoring
    series = series_estimate(cluster)
    return MonitoringContext(
        scrape_interval_s=settings.scrape_interval_s,
        retention_days=settings.retention_days,
        retention_size_gib=retention_size_gib(series, settings.scrape_interval_s, settings.retention_days),
        series=series,
        rack_targets=rack,
        cloud_groups=cloud,
        cloud_targets_dir=PROMETHEUS_CLOUD_TARGETS,
        rules_path=PROMETHEUS_RULES,
    )
