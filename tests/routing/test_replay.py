"""Replay of a small sacct history whose placements, GPU-hours and bill are worked out by hand.

Class exp (account research) bursts after 90 minutes, at most 4 cloud nodes; the controller passes every
60 s and a node boots in 10 min, so a burst job waits 11 min. od costs $10 and spot $4 per node-hour;
a cloud job is billed per node for its run plus 10 min of boot and 10 min of idle tail.
- 5001: 2 nodes, recorded wait 3 h: bursts at 00:01, runs 00:11-02:11 in od. 32 GPU-h, 2 × 2h20m = 4.667
  node-h, $46.67.
- 5002: recorded wait 30 min: stays. 8 rack GPU-h.
- 5003: 3 nodes, wait 3 h, seen at 01:01 while 5001 holds 2 of 4 nodes: capped, stays. 24 rack GPU-h.
- 5004: 2 nodes, wait 2h30m, seen at 02:31 after 5001 ended: bursts. 16 GPU-h, 2 × 1h20m, $26.67.
- 5005: an eval, sent to spot by job_submit.lua: a node boots, it waits 10 min. 8 GPU-h, 1h20m, $5.33.
- 5006: training: stays on the rack. 320 GPU-h. 5007 never started; 5008 (account ops) has no class.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.history import HistoryError, month_spend_by_class, parse_history
from gpucluster.routing.replay import replay
from gpucluster.routing.summary import as_json, as_text, summarize
from tests.routing.conftest import at

SAMPLE = Path(__file__).parent / "samples" / "sacct-small.txt"


def test_history_keeps_started_allocations() -> None:
    jobs = {j.job_id: j for j in parse_history(SAMPLE.read_text())}
    assert sorted(jobs) == ["5001", "5002", "5003", "5004", "5005", "5006", "5008"]
    assert (jobs["5003"].gpus, jobs["5003"].nodes, jobs["5003"].comment) == (24, 3, "a|b")
    assert jobs["5005"].comment == "" and jobs["5008"].gpus == 0
    assert jobs["5001"].recorded_wait_s == 3 * 3600 and jobs["5001"].run_s == 2 * 3600


def test_placements(config: RoutingConfig) -> None:
    placed = {p.job.job_id: p for p in replay(config, parse_history(SAMPLE.read_text()))}
    assert {k: (p.partition, p.wait_s / 60, p.why) for k, p in placed.items()} == {
        "5001": ("od", 11, "burst"),
        "5002": ("rack", 30, "rack start within the threshold"),
        "5003": ("rack", 180, "class at its cloud-node cap"),
        "5004": ("od", 11, "burst"),
        "5005": ("spot", 10, "route spot"),
        "5006": ("rack", 0, "route rack"),
        "5008": ("rack", 0, "no class"),
    }


def test_totals_per_route(config: RoutingConfig) -> None:
    summary = summarize(config, replay(config, parse_history(SAMPLE.read_text())))
    routes = {r.name: r for r in summary.routes}
    burst = routes["rack_then_cloud"]
    assert (burst.jobs, burst.rack_gpu_hours, burst.cloud_gpu_hours) == (4, 32, 48)
    assert burst.billed_node_hours == pytest.approx(2 * 140 / 60 + 2 * 80 / 60)
    assert burst.usd == pytest.approx(10 * (2 * 140 / 60 + 2 * 80 / 60))
    assert routes["spot"].usd == pytest.approx(4 * 80 / 60)
    assert routes["rack"].rack_gpu_hours == 320 and routes["rack"].usd == 0
    assert summary.cloud_gpu_hours == 56
    assert summary.usd == pytest.approx(46.6667 + 26.6667 + 5.3333, abs=1e-3)
    assert summary.window_hours == 10  # first submit 00:00 to last end 10:00
    assert summary.per_month(summary.cloud_gpu_hours) == pytest.approx(56 * 73)


def test_the_budget_share_stops_bursts_in_the_replay(config: RoutingConfig) -> None:
    exp = dataclasses.replace(config.classes[1], budget_usd_per_month=40.0)
    tight = dataclasses.replace(config, classes=(config.classes[0], exp, config.classes[2]))
    placed = {p.job.job_id: p for p in replay(tight, parse_history(SAMPLE.read_text()))}
    # 5001 bursts while the month's spend is $0; then it is $46.67, over $40: 5004 stays.
    assert (placed["5001"].why, placed["5004"].why) == ("burst", "class spent its budget share")


def test_text_and_json_reports(config: RoutingConfig) -> None:
    summary = summarize(config, replay(config, parse_history(SAMPLE.read_text())))
    text = as_text(summary, "sample")
    assert "Replay of sample: 7 jobs over 10.0 h" in text
    assert "exp: burst 2, class at its cloud-node cap 1, rack start within the threshold 1" in text
    data = json.loads(as_json(summary))
    burst = next(r for r in data["routes"] if r["name"] == "rack_then_cloud")
    assert burst["wait_minutes"] == {
        "mean": 58.0,
        "p95": 180.0,
        "max": 180.0,
        "recorded_mean": 135.0,
    }  # (180 + 30 + 180 + 150) / 4


def test_month_spend_counts_cloud_jobs_since_the_month_began(config: RoutingConfig) -> None:
    text = (
        "JobID|Partition|Account|QOS|Submit|Start|End|Elapsed|NNodes|AllocTRES|State|Comment\n"
        "1|od|research|normal|2026-10-31T20:00:00|2026-10-31T22:00:00|2026-11-01T02:00:00|04:00:00|2|gres/gpu=16|COMPLETED|\n"
        "2|od|research|normal|2026-11-02T08:00:00|2026-11-02T09:00:00|Unknown|01:30:00|1|gres/gpu=8|RUNNING|\n"
        "3|rack|research|normal|2026-11-02T08:00:00|2026-11-02T09:00:00|2026-11-02T10:00:00|01:00:00|1|gres/gpu=8|COMPLETED|\n"
        "4|spot|evals|eval|2026-11-02T08:00:00|2026-11-02T09:00:00|2026-11-02T10:00:00|01:00:00|1|gres/gpu=8|COMPLETED|\n"
    )
    spend = month_spend_by_class(config, parse_history(text), at("00:00", day=1))
    # Job 1: the 2 hours inside November × 2 nodes × $10; job 2: 1.5 h running × $10; job 4: 1 h × $4.
    assert spend == {"exp": pytest.approx(40 + 15), "eval": pytest.approx(4)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "<sacct>:1: empty; run `sacct --allusers"),
        ("JobID|Partition|Start\n1|rack|2026-11-02T00:00:00\n", "missing column(s) Account, QOS, Submit"),
        (SAMPLE.read_text().replace("|02:00:00|2|", "|02:00:00|two|", 1), "<sacct>:2: invalid literal"),
        (SAMPLE.read_text().replace("2026-11-02T00:30:00", "noon", 1), "<sacct>:4: Submit 'noon'"),
    ],
)
def test_bad_history_names_the_line(text: str, message: str) -> None:
    with pytest.raises(HistoryError) as caught:
        parse_history(text)
    assert message in str(caught.value)
