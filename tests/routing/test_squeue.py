"""squeue output in the two forms the controller reads: `-o FORMAT` text and `--json` (two data parsers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.routing.squeue import FORMAT, SqueueError, parse_json, parse_text
from tests.routing.conftest import at

SAMPLES = Path(__file__).parent / "samples"


def test_pending_text_with_expected_starts() -> None:
    jobs = {j.job_id: j for j in parse_text((SAMPLES / "squeue-pending.txt").read_text())}
    first = jobs["4101"]
    assert (first.state, first.partitions, first.account, first.qos) == (
        "PENDING",
        ("rack",),
        "research",
        "normal",
    )
    assert (first.submit, first.start, first.nodes, first.comment) == (at("08:00"), at("11:00"), 2, "")
    assert jobs["4103"].start is None  # N/A: the backfill scheduler has no plan for it yet
    assert jobs["4102"].comment == "lr|sweep, class=exp"  # the separator inside the last field is kept


def test_running_text_and_a_widened_job() -> None:
    jobs = parse_text((SAMPLES / "squeue-running.txt").read_text())
    assert [(j.job_id, j.state, j.partitions, j.start) for j in jobs][:2] == [
        ("4001", "RUNNING", ("od",), at("07:12")),
        ("4002", "RUNNING", ("rack",), at("06:00")),
    ]
    (widened,) = parse_text("7|PENDING|rack,od|research|normal|2026-11-02T08:00:00|N/A|2|Priority|\n")
    assert widened.partitions == ("rack", "od") and widened.pending


def test_the_format_is_what_the_parser_reads() -> None:
    assert FORMAT.count("|") == 9 and FORMAT.endswith("%k")  # comment (free text) last


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("4101|PENDING|rack|research\n", "<squeue>:1: 4 fields, expected 10"),
        ("4101|PENDING|rack|r|n|yesterday|N/A|1|Priority|\n", "<squeue>:1: Invalid isoformat string"),
        ("4101|PENDING|rack|r|n|2026-11-02T08:00:00|N/A|two|Priority|\n", "<squeue>:1: invalid literal"),
        ("4101|PENDING|rack|r|n|N/A|N/A|1|Priority|\n", "<squeue>:1: job 4101 has no submit time"),
    ],
)
def test_bad_text_names_the_line(line: str, message: str) -> None:
    with pytest.raises(SqueueError, match=message):
        parse_text(line)


def _number(value: float) -> dict[str, object]:
    return {"set": True, "infinite": False, "number": int(value)}


def test_json_of_newer_data_parsers() -> None:
    # Slurm 23.11+ (data_parser v0.0.40): job_state is a list, times and counts are {set, number} objects.
    job = {
        "job_id": 4101,
        "job_state": ["PENDING"],
        "partition": "rack",
        "account": "research",
        "qos": "normal",
        "comment": "",
        "submit_time": _number(at("08:00")),
        "start_time": _number(at("11:00")),
        "node_count": _number(2),
        "state_reason": "Resources",
    }
    unplanned = {**job, "job_id": 4103, "start_time": {"set": True, "infinite": False, "number": 0}}
    jobs = parse_json(json.dumps({"jobs": [job, unplanned], "meta": {}, "errors": [], "warnings": []}))
    assert [(j.job_id, j.state, j.start, j.nodes) for j in jobs] == [
        ("4101", "PENDING", at("11:00"), 2),
        ("4103", "PENDING", None, 2),
    ]


def test_json_of_older_data_parsers() -> None:
    # Slurm 23.02 (v0.0.39): job_state is a string and times are plain epoch numbers.
    job = {"job_id": 9, "job_state": "RUNNING", "partition": "od", "account": "research", "qos": "normal",
           "submit_time": int(at("08:00")), "start_time": int(at("08:12")), "node_count": 3}  # fmt: skip
    (parsed,) = parse_json(json.dumps({"jobs": [job]}))
    assert (parsed.state, parsed.partitions, parsed.start, parsed.nodes) == (
        "RUNNING",
        ("od",),
        at("08:12"),
        3,
    )


def test_json_that_is_not_squeue_output() -> None:
    with pytest.raises(SqueueError, match="not squeue --json output"):
        parse_json('{"nodes": []}')
