"""GPU utilization per partition from Slurm accounting (`sacct --parsable2`), over a time window.

Allocated GPU-hours are gres/gpu from AllocTRES times the part of each job's run inside the window;
available GPU-hours are the partition's declared GPUs times the window. AllocTRES carries gres/gpu
only when slurm.conf lists it in AccountingStorageTRES.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.sacct_fields import elapsed_s, gpus_in_tres

REQUIRED_COLUMNS = ("JobID", "Partition", "AllocTRES", "Elapsed", "Start")
SACCT_COMMAND = (
    "sacct --allusers --allocations --parsable2 -o JobID,Partition,AllocTRES,Elapsed,Start,End,State"
)


class SacctError(ValueError):
    """sacct output that cannot be read; names the line and the column."""


@dataclass(frozen=True)
class JobGpuTime:
    """One job allocation: where it ran, how many GPUs, from when to when."""

    job_id: str
    partition: str
    gpus: int
    start: datetime
    end: datetime


@dataclass(frozen=True)
class PartitionUtilization:
    """Allocated over available GPU-hours of one partition in the window."""

    partition: str
    allocated_gpu_hours: float
    available_gpu_hours: float

    @property
    def utilization(self) -> float:
        """Allocated / available (0 when nothing is available)."""
        if self.available_gpu_hours <= 0:
            return 0.0
        return self.allocated_gpu_hours / self.available_gpu_hours


def parse_sacct(text: str, source: str = "<sacct>") -> list[JobGpuTime]:
    """Job allocations with GPUs from `sacct --parsable2` text; steps and unstarted jobs are skipped."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise SacctError(f"{source}:1: missing column(s) {', '.join(missing)}; run `{SACCT_COMMAND}`")
    jobs = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("|"), strict=False))
        try:
            job = _job(row)
        except (ValueError, KeyError) as exc:
            raise SacctError(f"{source}:{number}: {exc}") from None
        if job is not None:
            jobs.append(job)
    return jobs


def _job(row: dict[str, str]) -> JobGpuTime | None:
    if "." in row["JobID"] or row["Start"] in ("", "Unknown", "None"):
        return None  # a job step (its allocation is on the job line) or a job that never started
    gpus = gpus_in_tres(row["AllocTRES"])
    if gpus == 0:
        return None
    start = datetime.fromisoformat(row["Start"])
    end_text = row.get("End", "")
    if end_text and end_text not in ("Unknown", "None"):
        end = datetime.fromisoformat(end_text)
    else:
        end = start + timedelta(seconds=elapsed_s(row["Elapsed"]))
    return JobGpuTime(row["JobID"], row["Partition"], gpus, start, end)


def window_of(jobs: list[JobGpuTime]) -> tuple[datetime, datetime]:
    """From the first start to the last end of the jobs."""
    return min(j.start for j in jobs), max(j.end for j in jobs)


def partition_gpus(cluster: Cluster) -> dict[str, int]:
    """GPUs each partition can allocate: its node groups' nodes × GPUs per node."""
    per_group = {g.name: g.max_nodes * g.gpu_count for g in node_groups(cluster)}
    return {p.name: sum(per_group[name] for name in p.node_groups) for p in cluster.slurm.partitions}


def utilization_by_partition(
    jobs: list[JobGpuTime], gpus: dict[str, int], start: datetime, end: datetime
) -> list[PartitionUtilization]:
    """Allocated / available GPU-hours per declared partition, jobs clipped to [start, end)."""
    hours = max((end - start).total_seconds(), 0.0) / 3600
    allocated = dict.fromkeys(gpus, 0.0)
    for job in jobs:
        overlap_s = (min(job.end, end) - max(job.start, start)).total_seconds()
        if overlap_s > 0:
            for partition in job.partition.split(","):  # a pending job may list several
                if partition in allocated:
                    allocated[partition] += job.gpus * overlap_s / 3600
                    break
    return [PartitionUtilization(name, allocated[name], gpus[name] * hours) for name in gpus]


def overall_utilization(rows: list[PartitionUtilization], cluster_gpus: int, hours: float) -> float:
    """All allocated GPU-hours over the whole cluster's GPU-hours (partitions may overlap in nodes)."""
    if cluster_gpus <= 0 or hours <= 0:
        return 0.0
    return sum(r.allocated_gpu_hours for r in rows) / (cluster_gpus * hours)
