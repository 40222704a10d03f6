"""Jobs in the queue, from `squeue --start -o FORMAT` text or `squeue --json`.

squeue prints times in the controller's local time without a zone (2026-11-02T10:00:00); they become
epoch seconds in this host's zone, which is the controller's. `%S` is the expected start of a pending job
(the backfill scheduler's plan, N/A before it has one) and the actual start of a running one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Comment last: it is free text and may hold the separator.
FORMAT = "%i|%T|%P|%a|%q|%V|%S|%D|%r|%k"
FIELDS = ("job_id", "state", "partition", "account", "qos", "submit", "start", "nodes", "reason", "comment")
PENDING_COMMAND = ("--start", "--noheader", "--states=PENDING", "-o", FORMAT)
RUNNING_COMMAND = ("--noheader", "--states=RUNNING,CONFIGURING", "-o", FORMAT)
_UNKNOWN_TIMES = ("", "N/A", "Unknown", "None", "(null)")


class SqueueError(ValueError):
    """squeue output that cannot be read; names the line."""


@dataclass(frozen=True)
class QueuedJob:
    """One job as squeue shows it: where it may run, who it is, when it came and when it starts."""

    job_id: str
    state: str  # PENDING, RUNNING, CONFIGURING, …
    partitions: tuple[str, ...]
    account: str
    qos: str
    comment: str
    submit: float  # epoch seconds
    start: float | None  # expected (pending) or actual (running); None: not planned yet
    nodes: int
    reason: str = ""

    @property
    def pending(self) -> bool:
        """Still waiting for nodes."""
        return self.state == "PENDING"


def epoch(text: str) -> float | None:
    """A squeue/sacct local time as epoch seconds; None for N/A and the like."""
    if text.strip() in _UNKNOWN_TIMES:
        return None
    return datetime.fromisoformat(text.strip()).timestamp()


def parse_text(text: str, source: str = "<squeue>") -> list[QueuedJob]:
    """Jobs from `squeue --noheader -o FORMAT` output (one job per line)."""
    jobs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        values = line.split("|", len(FIELDS) - 1)
        if len(values) != len(FIELDS):
            raise SqueueError(f"{source}:{number}: {len(values)} fields, expected {len(FIELDS)} ({FORMAT})")
        row = dict(zip(FIELDS, values, strict=True))
        try:
            jobs.append(_job(row))
        except ValueError as exc:
            raise SqueueError(f"{source}:{number}: {exc}") from None
    return jobs


def _job(row: dict[str, str]) -> QueuedJob:
    submit = epoch(row["submit"])
    if submit is None:
        raise ValueError(f"job {row['job_id']} has no submit time")
    return QueuedJob(
        job_id=row["job_id"].strip(),
        state=row["state"].strip(),
        partitions=tuple(p for p in row["partition"].strip().split(",") if p),
        account=row["account"].strip(),
        qos=row["qos"].strip(),
        comment=row["comment"].strip() if row["comment"].strip() != "(null)" else "",
        submit=submit,
        start=epoch(row["start"]),
        nodes=int(row["nodes"]),
        reason=row["reason"].strip(),
    )


def parse_json(text: str, source: str = "<squeue --json>") -> list[QueuedJob]:
    """Jobs from `squeue --json` (data_parser v0.0.39 and later: numbers may be {set, number})."""
    try:
        jobs = json.loads(text)["jobs"]
        return [_json_job(job) for job in jobs]
    except (ValueError, KeyError, TypeError) as exc:
        raise SqueueError(f"{source}: not squeue --json output: {exc!r}") from None


def _number(value: Any) -> float | None:
    """A plain number, or the {set, infinite, number} object of newer data parsers; 0 and unset: None."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    return float(value) if value else None


def _json_job(job: dict[str, Any]) -> QueuedJob:
    state = job["job_state"]
    submit = _number(job["submit_time"])
    if submit is None:
        raise ValueError(f"job {job['job_id']} has no submit time")
    return QueuedJob(
        job_id=str(job["job_id"]),
        state=state[0] if isinstance(state, list) else str(state),
        partitions=tuple(p for p in str(job.get("partition", "")).split(",") if p),
        account=str(job.get("account", "")),
        qos=str(job.get("qos", "")),
        comment=str(job.get("comment", "") or ""),
        submit=submit,
        start=_number(job.get("start_time")),
        nodes=int(_number(job.get("node_count")) or 1),
        reason=str(job.get("state_reason", "")),
    )
