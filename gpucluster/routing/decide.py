"""One pass of the burst controller as a pure function: the queue and the cloud spend in, decisions out.

A rack_then_cloud job starts in the rack partition (job_submit.lua). It is widened to the rack and the
cloud partition once its expected wait (submit to expected rack start, or its age when the scheduler has
no plan for it yet or its plan is stale) passes its class's threshold, unless the rack starts it sooner
than a cloud node could boot, or its class is at its cloud-node cap or has spent its budget share this
month. Oldest first, so a cap goes to the jobs that waited longest.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from gpucluster.routing.classify import classify
from gpucluster.routing.config import ClassConfig, RoutingConfig
from gpucluster.routing.squeue import QueuedJob

Action = Literal["widen", "wait", "cap", "budget"]


@dataclass(frozen=True)
class Decision:
    """What the pass does with one job, and why, as the log line says it."""

    job_id: str
    job_class: str
    action: Action
    expected_wait_s: float | None  # submit to expected rack start; None: no plan yet
    why: str

    def line(self) -> str:
        """`job 42 class experiment expected wait 1h55m: widen: …`, one per decision."""
        return (
            f"job {self.job_id} class {self.job_class} expected wait {minutes(self.expected_wait_s)}:"
            f" {self.action}: {self.why}"
        )


def minutes(seconds: float | None) -> str:
    """A duration as 1h55m or 12m (unknown: `unknown`)."""
    if seconds is None:
        return "unknown"
    whole = max(0, round(seconds / 60))
    return f"{whole // 60}h{whole % 60:02d}m" if whole >= 60 else f"{whole}m"


def class_of(config: RoutingConfig, job: QueuedJob) -> ClassConfig | None:
    """The job's class by job_submit.lua's rules."""
    return classify(config, job.account, job.qos, job.comment).job_class


def cloud_nodes_by_class(config: RoutingConfig, jobs: list[QueuedJob]) -> Counter[str]:
    """Cloud nodes each class holds: running in the cloud partition, or pending and already widened."""
    held: Counter[str] = Counter()
    for job in jobs:
        in_cloud = config.cloud_partition in job.partitions
        if (job.pending and in_cloud) or (not job.pending and job.partitions == (config.cloud_partition,)):
            job_class = class_of(config, job)
            if job_class is not None:
                held[job_class.name] += job.nodes
    return held


def waiting_on_rack(config: RoutingConfig, job: QueuedJob) -> bool:
    """Pending in the rack partition only: a rack_then_cloud job not widened yet."""
    return job.pending and job.partitions == (config.rack_partition,)


def decide(
    config: RoutingConfig, jobs: list[QueuedJob], spend_usd: dict[str, float], now: float
) -> list[Decision]:
    """A decision for every pending rack_then_cloud job not yet widened, oldest first."""
    held = cloud_nodes_by_class(config, jobs)
    decisions = []
    for job in sorted(jobs, key=lambda j: (j.submit, j.job_id)):
        job_class = class_of(config, job) if waiting_on_rack(config, job) else None
        if job_class is None or not job_class.bursts:
            continue
        decision = _decide_one(
            config, job_class, job=job, held=held[job_class.name], spend=spend_usd, now=now
        )
        if decision.action == "widen":
            held[job_class.name] += job.nodes
        decisions.append(decision)
    return decisions


def _decide_one(
    config: RoutingConfig,
    job_class: ClassConfig,
    *,
    job: QueuedJob,
    held: int,
    spend: dict[str, float],
    now: float,
) -> Decision:
    assert job_class.after_wait_s is not None
    threshold = job_class.after_wait_s
    wait = None if job.start is None else max(job.start, now) - job.submit
    age = now - job.submit

    def made(action: Action, why: str) -> Decision:
        return Decision(job.job_id, job_class.name, action, wait, why)

    if wait is None and age <= threshold:
        return made("wait", f"no rack start planned yet; pending {minutes(age)} of {minutes(threshold)}")
    if wait is not None and wait <= threshold and age <= threshold:
        return made("wait", f"the rack starts it within {minutes(threshold)}")
    # A plan older than a pass is stale (the backfill scheduler renews the plans it keeps): the age decides.
    if job.start is not None and -config.interval_s <= job.start - now < config.cloud_boot_s:
        return made("wait", f"the rack starts it in {minutes(job.start - now)}, before a cloud node boots")
    cap = job_class.max_cloud_nodes
    if cap is not None and held + job.nodes > cap:
        return made("cap", f"class holds {held} of {cap} cloud nodes; this job needs {job.nodes}")
    budget = job_class.budget_usd_per_month
    spent = spend.get(job_class.name, 0.0)
    if budget is not None and spent >= budget:
        return made("budget", f"class spent ${spent:,.0f} of its ${budget:,.0f} this month")
    target = f"{config.rack_partition},{config.cloud_partition}"
    return made("widen", f"over {minutes(threshold)}: partition {target}")
