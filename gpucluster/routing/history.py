"""Finished and running jobs from `sacct --parsable2`: what replay reads and what the budget guard counts."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpucluster.routing.classify import classify
from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.squeue import epoch
from gpucluster.sacct_fields import elapsed_s, gpus_in_tres

# Comment last: it is free text and may hold the separator. It is stored only with
# AccountingStoreFlags=job_comment (slurm.conf sets it when the cluster file has a routing section).
COLUMNS = "JobID,Partition,Account,QOS,Submit,Start,End,Elapsed,NNodes,AllocTRES,State,Comment"
REQUIRED = ("JobID", "Partition", "Account", "QOS", "Submit", "Start", "Elapsed", "NNodes", "AllocTRES")
SACCT_COMMAND = f"sacct --allusers --allocations --parsable2 -S <start> -E <end> -o {COLUMNS}"


class HistoryError(ValueError):
    """sacct output that cannot be read; names the file, the line and the column."""


@dataclass(frozen=True)
class PastJob:
    """One job allocation as accounting recorded it."""

    job_id: str
    partition: str
    account: str
    qos: str
    comment: str
    submit: float  # epoch seconds
    start: float
    end: float
    nodes: int
    gpus: int

    @property
    def run_s(self) -> float:
        """How long it ran."""
        return max(0.0, self.end - self.start)

    @property
    def recorded_wait_s(self) -> float:
        """Submit to start, as it happened."""
        return max(0.0, self.start - self.submit)


def parse_history(text: str, source: str = "<sacct>") -> list[PastJob]:
    """Started job allocations from `sacct --parsable2` text; steps and never-started jobs are skipped."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise HistoryError(f"{source}:1: empty; run `{SACCT_COMMAND}`")
    header = lines[0].strip().split("|")
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise HistoryError(f"{source}:1: missing column(s) {', '.join(missing)}; run `{SACCT_COMMAND}`")
    last_is_comment = header[-1] == "Comment"
    jobs = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        values = line.split("|", len(header) - 1) if last_is_comment else line.split("|")
        if len(values) != len(header):
            raise HistoryError(f"{source}:{number}: {len(values)} fields, the header has {len(header)}")
        try:
            job = _job(dict(zip(header, values, strict=True)))
        except ValueError as exc:
            raise HistoryError(f"{source}:{number}: {exc}") from None
        if job is not None:
            jobs.append(job)
    return jobs


def _time(row: dict[str, str], column: str) -> float | None:
    try:
        return epoch(row.get(column, ""))
    except ValueError:
        raise ValueError(f"{column} {row[column]!r} is not a time such as 2026-11-02T10:00:00") from None


def _job(row: dict[str, str]) -> PastJob | None:
    start = _time(row, "Start")
    if "." in row["JobID"] or start is None:
        return None  # a job step (its allocation is on the job line) or a job that never started
    submit = _time(row, "Submit")
    if submit is None:
        raise ValueError(f"Submit {row['Submit']!r} of job {row['JobID']} is not a time")
    end = _time(row, "End")
    if end is None:
        end = start + elapsed_s(row["Elapsed"])
    comment = row.get("Comment", "")
    return PastJob(
        job_id=row["JobID"],
        partition=row["Partition"],
        account=row["Account"],
        qos=row["QOS"],
        comment="" if comment == "(null)" else comment,
        submit=submit,
        start=start,
        end=end,
        nodes=int(row["NNodes"]),
        gpus=gpus_in_tres(row["AllocTRES"]),
    )


def month_spend_by_class(config: RoutingConfig, jobs: list[PastJob], since: float) -> dict[str, float]:
    """Dollars each class spent in the priced partitions since `since`: node-hours × the partition's price."""
    spend: dict[str, float] = defaultdict(float)
    for job in jobs:
        price = config.prices.get(job.partition)
        job_class = classify(config, job.account, job.qos, job.comment).job_class
        if price is None or job_class is None:
            continue
        hours = max(0.0, job.end - max(job.start, since)) / 3600
        spend[job_class.name] += job.nodes * hours * price.usd_per_node_hour
    return dict(spend)
