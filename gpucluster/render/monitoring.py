"""What the controller's Prometheus files need: targets, labels, alert limits and the disk it may use.

Rack nodes are static targets (their declared management addresses) labelled site=rack and their
node group; cloud nodes come and go through file_sd files in PROMETHEUS_CLOUD_TARGETS, so a powered-down
cloud node is no target and raises no alert. Every GPU node is scraped twice: node exporter (:9100) and
dcgm-exporter (:9400); the on-prem service hosts (no GPUs) by node exporter only, in node group "service".

From Slurm 25.11 slurmctld serves its own metrics on SlurmctldPort (https://slurm.schedmd.com/metrics.html):
one job per endpoint (Prometheus has one metrics_path per job) on an on-prem controller. Not
/metrics/jobs-users-accts: a series per user and account, unbounded, which SchedMD advises against storing.

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
from gpucluster.render.context import slurm_serves_metrics

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
SERVICE_GROUP: Final = "service"  # the node_group label of the on-prem service hosts
# slurmctld's endpoints and the jobs that scrape them. Each scrape takes slurmctld's locks: SchedMD advises
# 60-120 s between scrapes, so these jobs never scrape more often than once a minute.
SLURM_ENDPOINTS: Final = (
    ("slurm_jobs", "/metrics/jobs"),
    ("slurm_nodes", "/metrics/nodes"),
    ("slurm_partitions", "/metrics/partitions"),
    ("slurm_scheduler", "/metrics/scheduler"),
)
SLURM_MIN_SCRAPE_INTERVAL_S: Final = 60
# slurmctld's series, counted in Slurm's src/plugins/metrics/openmetrics/openmetrics.c: 10 per declared
# node, about 70 per partition, and about 120 totals (nodes, jobs, scheduler).
SLURM_SERIES_PER_NODE: Final = 10
SLURM_SERIES_PER_PARTITION: Final = 70
SLURM_SERIES_FIXED: Final = 120


@dataclass(frozen=True)
class Target:
    """One rack node to scrape: its Slurm name, address and node group."""

    node: str
    address: str
    node_group: str


@dataclass(frozen=True)
class SlurmScrape:
    """slurmctld's metrics endpoints and where they are served: the controller at its SlurmctldPort."""

    controller: str
    address: str  # <management address>:<SlurmctldPort>
    endpoints: tuple[tuple[str, str], ...]  # (job name, metrics path)
    scrape_interval_s: int


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
    service_targets: tuple[Target, ...] = ()  # on-prem service hosts: node exporter only
    slurm: SlurmScrape | None = None
    slurm_skipped: str = ""  # why slurmctld is not scraped (a comment in prometheus.yml); "" when it is
    node_exporter_port: int = NODE_EXPORTER_PORT
    dcgm_exporter_port: int = DCGM_EXPORTER_PORT
    rack_down_minutes: int = RACK_DOWN_MINUTES
    idle_below: float = IDLE_BELOW
    idle_minutes: int = IDLE_MINUTES
    burst_cap_minutes: int = BURST_CAP_MINUTES


def series_estimate(cluster: Cluster) -> int:
    """Active series with every node of every group up and every service host.

    Node exporter per node and service host, DCGM fields per GPU, and slurmctld's series per node and
    per partition where it is scraped.
    """
    groups = node_groups(cluster)
    series = sum(g.max_nodes * (NODE_EXPORTER_SERIES + g.gpu_count * DCGM_SERIES_PER_GPU) for g in groups)
    series += len(_service_targets(cluster)) * NODE_EXPORTER_SERIES
    if _slurm_scrape(cluster)[0] is not None:
        partitions = len(cluster.slurm.partitions) + (len(cluster.aws.capacity) if cluster.aws else 0)
        series += SLURM_SERIES_FIXED + partitions * SLURM_SERIES_PER_PARTITION
        # Every node slurm.conf declares, powered down or not (a mixed group declares each model's names).
        series += sum(len(g.hosts) for g in groups) * SLURM_SERIES_PER_NODE
    return series


def _service_targets(cluster: Cluster) -> tuple[Target, ...]:
    hosts = cluster.onprem.service_hosts if cluster.onprem else []
    return tuple(Target(h.name, str(h.address), SERVICE_GROUP) for h in hosts)


def _slurm_scrape(cluster: Cluster) -> tuple[SlurmScrape | None, str]:
    """The endpoints of an on-prem controller's slurmctld (Slurm >= 25.11), else None and why not."""
    version = cluster.versions.slurm
    if not slurm_serves_metrics(cluster):
        return None, (
            f"Slurm {version} < 25.11 has no built-in metrics (MetricsType) and Debian 12 ships no"
            " Slurm exporter package"
        )
    name = cluster.slurm.controller
    controller = next((t for t in _service_targets(cluster) if t.node == name), None)
    if controller is None:
        return None, f"the controller {name} is no on-prem service host"
    return SlurmScrape(
        controller=name,
        address=f"{controller.address}:{cluster.slurm.slurmctld_port}",
        endpoints=SLURM_ENDPOINTS,
        scrape_interval_s=max(SLURM_MIN_SCRAPE_INTERVAL_S, cluster.monitoring.scrape_interval_s),
    ), ""


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
    slurm, skipped = _slurm_scrape(cluster)
    return MonitoringContext(
        scrape_interval_s=settings.scrape_interval_s,
        retention_days=settings.retention_days,
        retention_size_gib=retention_size_gib(series, settings.scrape_interval_s, settings.retention_days),
        series=series,
        rack_targets=rack,
        cloud_groups=cloud,
        cloud_targets_dir=PROMETHEUS_CLOUD_TARGETS,
        rules_path=PROMETHEUS_RULES,
        service_targets=_service_targets(cluster),
        slurm=slurm,
        slurm_skipped=skipped,
    )
