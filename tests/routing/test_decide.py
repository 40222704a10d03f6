"""The burst controller's pass on crafted queues whose answers are worked out by hand.

Now is 10:00. Class exp bursts once its expected wait passes 90 minutes, holds at most 4 cloud nodes
and $1000 a month; a cloud node boots in 10 minutes. Job 4001 (exp, 2 nodes) already runs in od.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.decide import cloud_nodes_by_class, decide
from gpucluster.routing.squeue import QueuedJob, parse_text
from tests.routing.conftest import at

SAMPLES = Path(__file__).parent / "samples"
NOW = at("10:00")


def _queue() -> list[QueuedJob]:
    return parse_text((SAMPLES / "squeue-pending.txt").read_text()) + parse_text(
        (SAMPLES / "squeue-running.txt").read_text()
    )


def test_held_cloud_nodes_count_running_cloud_jobs_only(config: RoutingConfig) -> None:
    # 4001 runs in od; 4002 runs on the rack; 4003 (eval) runs on spot, not the cloud partition.
    assert cloud_nodes_by_class(config, _queue()) == {"exp": 2}


def test_the_pass_on_the_sample_queue(config: RoutingConfig) -> None:
    decisions = decide(config, _queue(), {}, NOW)
    # Oldest first; training (4105) and the eval (4106) are not the controller's.
    assert [(d.job_id, d.action) for d in decisions] == [
        ("4101", "widen"),  # 08:00 → 11:00 is 3 h; the rack is an hour away; 2 held + 2 ≤ 4
        ("4107", "cap"),  # no plan, but pending 1h50m; 4 held after 4101 + 1 > 4
        ("4108", "wait"),  # 08:20 → 10:05 is 1h45m, but the rack starts it in 5 min, before a boot
        ("4102", "wait"),  # 09:30 → 10:05: 35 min
        ("4103", "wait"),  # no plan, pending 5 min
    ]
    lines = [d.line() for d in decisions]
    assert lines[0] == "job 4101 class exp expected wait 3h00m: widen: over 1h30m: partition rack,od"
    assert (
        lines[1]
        == "job 4107 class exp expected wait unknown: cap: class holds 4 of 4 cloud nodes; this job needs 1"
    )
    assert lines[2] == (
        "job 4108 class exp expected wait 1h45m: wait: the rack starts it in 5m, before a cloud node boots"
    )
    assert lines[3] == "job 4102 class exp expected wait 35m: wait: the rack starts it within 1h30m"
    assert (
        lines[4]
        == "job 4103 class exp expected wait unknown: wait: no rack start planned yet; pending 5m of 1h30m"
    )


def test_an_already_widened_job_holds_its_nodes(config: RoutingConfig) -> None:
    widened = parse_text("4104|PENDING|rack,od|research|normal|2026-11-02T07:00:00|N/A|2|Resources|\n")
    decisions = decide(config, _queue() + widened, {}, NOW)
    assert cloud_nodes_by_class(config, _queue() + widened) == {"exp": 4}
    assert [(d.job_id, d.action) for d in decisions][:2] == [("4101", "cap"), ("4107", "cap")]
    assert "4104" not in {d.job_id for d in decisions}  # widened once, never again


def test_the_budget_stops_widening(config: RoutingConfig) -> None:
    decisions = decide(config, _queue(), {"exp": 1000.0}, NOW)
    assert decisions[0].action == "budget"
    assert decisions[0].why == "class spent $1,000 of its $1,000 this month"
    assert decide(config, _queue(), {"exp": 999.0}, NOW)[0].action == "widen"


def test_no_cap_lets_every_overdue_job_go(config: RoutingConfig) -> None:
    exp = dataclasses.replace(config.classes[1], max_cloud_nodes=None)
    free = dataclasses.replace(config, classes=(config.classes[0], exp, config.classes[2]))
    assert [d.job_id for d in decide(free, _queue(), {}, NOW) if d.action == "widen"] == ["4101", "4107"]


def test_the_threshold_is_strict(config: RoutingConfig) -> None:
    # Expected wait exactly 90 minutes: not later than the threshold, so it stays.
    (job,) = parse_text(
        "1|PENDING|rack|research|normal|2026-11-02T09:00:00|2026-11-02T10:30:00|1|Resources|\n"
    )
    (decision,) = decide(config, [job], {}, at("09:01"))
    assert decision.action == "wait"
    (later,) = parse_text(
        "1|PENDING|rack|research|normal|2026-11-02T09:00:00|2026-11-02T10:31:00|1|Resources|\n"
    )
    assert decide(config, [later], {}, at("09:01"))[0].action == "widen"


def test_a_stale_plan_does_not_hold_a_job_forever(config: RoutingConfig) -> None:
    # Planned for 09:00 and still pending at 10:00: the plan is stale, and pending 3 h is over 90 minutes.
    (job,) = parse_text(
        "1|PENDING|rack|research|normal|2026-11-02T07:00:00|2026-11-02T09:00:00|1|Resources|\n"
    )
    (decision,) = decide(config, [job], {}, NOW)
    assert (decision.action, decision.expected_wait_s) == ("widen", 3 * 3600)
    # A plan for this very pass is not stale: the rack is about to start it.
    (due,) = parse_text(
        "1|PENDING|rack|research|normal|2026-11-02T07:00:00|2026-11-02T09:59:30|1|Resources|\n"
    )
    assert decide(config, [due], {}, NOW)[0].action == "wait"
