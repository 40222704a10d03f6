"""Replay a sacct history through the routing policy: where each job would have run, what it would cost.

Assumptions, stated in every report: the scheduler's plan was right (a job's expected rack start is the
start accounting recorded) and the controller saw it at its first pass after submit; cloud capacity was
there (a cloud or spot job waits a node's boot, a burst one pass more); jobs that stay on the rack keep their
recorded wait (the ones that left would have let some start sooner, so rack waits are an upper bound).
A cloud job is billed per node for its run plus a boot and its partition's idle tail before power-down.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from gpucluster.routing.classify import classify
from gpucluster.routing.config import ClassConfig, RoutingConfig
from gpucluster.routing.history import PastJob

UNCLASSIFIED = "(as submitted)"


@dataclass(frozen=True)
class Placement:
    """Where the policy puts one past job, after what wait, and why."""

    job: PastJob
    job_class: str
    route: str
    partition: str
    wait_s: float
    why: str


@dataclass
class _ClassState:
    """A rack_then_cloud class during the replay: its cloud nodes in use and its spend per month."""

    running: list[tuple[float, int]] = field(default_factory=list)  # heap of (end, nodes)
    nodes: int = 0
    spend: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # "YYYY-MM" → $

    def nodes_at(self, when: float) -> int:
        while self.running and self.running[0][0] <= when:
            self.nodes -= heapq.heappop(self.running)[1]
        return self.nodes


def replay(config: RoutingConfig, jobs: list[PastJob]) -> list[Placement]:
    """Every job's placement under the policy, in submit order."""
    states: dict[str, _ClassState] = defaultdict(_ClassState)
    out = []
    for job in sorted(jobs, key=lambda j: (j.submit, j.job_id)):
        found = classify(config, job.account, job.qos, job.comment).job_class
        if found is None:
            out.append(
                Placement(job, UNCLASSIFIED, "as submitted", job.partition, job.recorded_wait_s, "no class")
            )
        elif found.bursts:
            out.append(_burst_or_stay(config, found, job, states[found.name]))
        else:
            out.append(_routed(config, found, job))
    return out


def _routed(config: RoutingConfig, job_class: ClassConfig, job: PastJob) -> Placement:
    if job_class.route == "rack":
        return Placement(
            job, job_class.name, "rack", config.rack_partition, job.recorded_wait_s, "route rack"
        )
    wait = config.cloud_boot_s  # job_submit.lua names the partition: Slurm resumes a node at once
    return Placement(
        job, job_class.name, job_class.route, job_class.first_partition, wait, f"route {job_class.route}"
    )


def _burst_or_stay(
    config: RoutingConfig, job_class: ClassConfig, job: PastJob, state: _ClassState
) -> Placement:
    assert job_class.after_wait_s is not None
    seen = job.submit + config.interval_s  # the controller's first pass after submit

    def stay(why: str) -> Placement:
        return Placement(
            job, job_class.name, "rack_then_cloud", config.rack_partition, job.recorded_wait_s, why
        )

    if job.recorded_wait_s <= job_class.after_wait_s:
        return stay("rack start within the threshold")
    if job.start - seen < config.cloud_boot_s:
        return stay("rack start sooner than a cloud boot")
    cap = job_class.max_cloud_nodes
    if cap is not None and state.nodes_at(seen) + job.nodes > cap:
        return stay("class at its cloud-node cap")
    month = datetime.fromtimestamp(seen).strftime("%Y-%m")
    budget = job_class.budget_usd_per_month
    if budget is not None and state.spend[month] >= budget:
        return stay("class spent its budget share")
    cloud_start = seen + config.cloud_boot_s
    state.nodes += job.nodes
    heapq.heappush(state.running, (cloud_start + job.run_s, job.nodes))
    state.spend[month] += billed_node_hours(config, config.cloud_partition, job) * _price(
        config, config.cloud_partition
    )
    return Placement(
        job, job_class.name, "rack_then_cloud", config.cloud_partition, cloud_start - job.submit, "burst"
    )


def _price(config: RoutingConfig, partition: str) -> float:
    price = config.prices.get(partition)
    return price.usd_per_node_hour if price else 0.0


def billed_node_hours(config: RoutingConfig, partition: str, job: PastJob) -> float:
    """Instance-hours a cloud job is billed: per node its run, a boot and the partition's idle tail."""
    price = config.prices.get(partition)
    if price is None:
        return 0.0
    return job.nodes * (job.run_s + config.cloud_boot_s + price.idle_s) / 3600
