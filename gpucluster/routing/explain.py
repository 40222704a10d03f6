"""Why a job is where it is: its class and what recognised it, its route, and this pass's decision."""

from __future__ import annotations

from datetime import datetime

from gpucluster.routing.classify import classify
from gpucluster.routing.config import ClassConfig, RoutingConfig
from gpucluster.routing.decide import decide, minutes
from gpucluster.routing.squeue import QueuedJob


class NotQueuedError(LookupError):
    """The job is not in the queue (it ended, or never existed)."""


def _when(stamp: float | None) -> str:
    return "not planned yet" if stamp is None else datetime.fromtimestamp(stamp).strftime("%Y-%m-%dT%H:%M:%S")


def _route_line(config: RoutingConfig, job_class: ClassConfig) -> str:
    if job_class.bursts:
        assert job_class.after_wait_s is not None
        return (
            f"route rack_then_cloud: job_submit.lua sends it to {config.rack_partition}; the controller"
            f" widens it to {config.rack_partition},{config.cloud_partition} once its expected wait passes"
            f" {minutes(job_class.after_wait_s)}"
        )
    return f"route {job_class.route}: job_submit.lua sends it to {job_class.first_partition}"


def explain(
    config: RoutingConfig, job_id: str, jobs: list[QueuedJob], spend_usd: dict[str, float], now: float
) -> list[str]:
    """Lines that say why the job is where it is; NotQueuedError when squeue does not show it."""
    job = next((j for j in jobs if j.job_id == job_id), None)
    if job is None:
        raise NotQueuedError(job_id)
    found = classify(config, job.account, job.qos, job.comment)
    who = f"account {job.account or '-'}, QOS {job.qos or '-'}, comment {job.comment or '-'}"
    lines = [f"job {job_id}: {who}"]
    where = ",".join(job.partitions)
    if found.job_class is None:
        return [*lines, f"no class: {found.because}; it stays where it was submitted ({where})"]
    lines += [f"class {found.job_class.name}: {found.because}", _route_line(config, found.job_class)]
    if not job.pending:
        return [*lines, f"{job.state} in {where} since {_when(job.start)}"]
    lines.append(
        f"pending {minutes(now - job.submit)} in {where} ({job.reason or 'no reason given'});"
        f" expected rack start {_when(job.start)}"
    )
    mine = [d for d in decide(config, jobs, spend_usd, now) if d.job_id == job_id]
    if mine:
        lines.append("this pass: " + mine[0].line())
    elif found.job_class.bursts:
        lines.append(f"already widened to {where}: it starts wherever nodes free up first")
    return lines
