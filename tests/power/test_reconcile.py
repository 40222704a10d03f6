"""The reconciler against emulated EC2: instances follow Slurm's node states, whatever happened between."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import pytest

from gpucluster.names import CLUSTER_TAG, NODE_TAG
from gpucluster.power import fleet, reconcile, resume, suspend
from gpucluster.power.resume import Request
from gpucluster.power.resume_marks import ResumeMarks
from gpucluster.power.slurm import NodeState, parse_nodes
from tests.power.conftest import Aws, RecordingSlurm

# `scontrol show nodes --oneliner` lines as Debian's Slurm 22.05.8 prints them (fields cut for width).
SCONTROL = """\
NodeName=gpu-a01 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 NodeAddr=10.77.0.11 NodeHostName=gpu-a01 State=IDLE ThreadsPerCore=1 Partitions=rack
NodeName=p5-od-1 CoresPerSocket=48 CPUAlloc=0 NodeAddr=p5-od-1 NodeHostName=p5-od-1 State=IDLE+CLOUD+POWERED_DOWN Partitions=cloud,power-p5-od
NodeName=p5-od-2 CoresPerSocket=48 CPUAlloc=192 NodeAddr=10.100.0.12 NodeHostName=p5-od-2 State=ALLOCATED+CLOUD Partitions=cloud,power-p5-od
NodeName=p5-od-3 CoresPerSocket=48 CPUAlloc=192 NodeAddr=p5-od-3 State=ALLOCATED+CLOUD+POWERING_UP Partitions=cloud,power-p5-od
NodeName=p5-spot-1 CoresPerSocket=48 NodeAddr=p5-spot-1 State=DOWN+CLOUD+POWERED_DOWN Partitions=cloud,power-p5-spot Reason=gpucluster: InsufficientInstanceCapacity: no p5 in us-east-1a [slurm@2026-12-03T10:00:00]
"""  # noqa: E501


def _state(name: str, text: str, reason: str = "", when: float | None = None) -> NodeState:
    base, *flags = text.split("+")
    return NodeState(name, base, frozenset(flags), reason=reason, reason_time=when)


def _live(aws: Aws) -> dict[str, str]:
    found = {}
    for reservation in aws.ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            if instance["State"]["Name"] in ("pending", "running"):
                found[instance["InstanceId"]] = f"{tags.get(CLUSTER_TAG)}/{tags.get(NODE_TAG, '-')}"
    return found


def _launch(aws: Aws, slurm: RecordingSlurm, *nodes: str) -> dict[str, str]:
    launches = resume.resume(aws.cfg, [Request(nodes)], ec2=aws.ec2, ssm=aws.ssm, slurm=slurm)
    return {n: i for launch in launches for n, i in launch.instances.items()}


def test_scontrol_oneliner_is_parsed_into_states_flags_and_reason_time() -> None:
    nodes = parse_nodes(SCONTROL)
    assert nodes["gpu-a01"].up and nodes["gpu-a01"].address == "10.77.0.11"
    assert nodes["p5-od-1"].powered_down and not nodes["p5-od-1"].up
    assert nodes["p5-od-2"].up and nodes["p5-od-2"].state == "ALLOCATED"
    assert nodes["p5-od-3"].powering_up and not nodes["p5-od-3"].powered_down
    spot = nodes["p5-spot-1"]
    assert spot.down and spot.reason == "gpucluster: InsufficientInstanceCapacity: no p5 in us-east-1a"
    assert spot.reason_time == 1796292000.0  # 2026-12-03T10:00:00 UTC


def test_a_powered_down_node_loses_its_leaked_instance_and_a_running_one_keeps_its_own(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    ids = _launch(aws, slurm, "p5-od-1", "p5-od-2")
    # The controller restarted after the suspend was asked for: p5-od-1 is off, its instance still runs.
    slurm.states = {
        "p5-od-1": _state("p5-od-1", "IDLE+CLOUD+POWERED_DOWN"),
        "p5-od-2": _state("p5-od-2", "IDLE+CLOUD"),
    }
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert done.terminate == {ids["p5-od-1"]: "p5-od-1 is powered down"}
    assert _live(aws) == {ids["p5-od-2"]: "example/p5-od-2"}
    assert slurm.down == [] and slurm.returned == []
    # A second pass finds nothing to do: the reconciler converges.
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm).lines() == []


def test_a_node_whose_instance_vanished_goes_down_so_its_job_requeues(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    ids = _launch(aws, slurm, "p5-spot-1", "p5-spot-2")
    aws.ec2.terminate_instances(InstanceIds=[ids["p5-spot-1"]])  # spot reclaimed, out of band
    slurm.states = {
        "p5-spot-1": _state("p5-spot-1", "ALLOCATED+CLOUD"),
        "p5-spot-2": _state("p5-spot-2", "ALLOCATED+CLOUD"),
        "p5-spot-3": _state("p5-spot-3", "IDLE+CLOUD+POWERED_DOWN"),
    }
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert done.terminate == {}
    assert slurm.down == [
        (["p5-spot-1"], "gpucluster: instance gone (spot reclaimed or terminated out of band)")
    ]


def test_a_booting_node_whose_instance_ended_goes_down_and_one_still_booting_waits(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    ids = _launch(aws, slurm, "p5-spot-1", "p5-spot-2")
    aws.ec2.terminate_instances(InstanceIds=[ids["p5-spot-1"]])
    slurm.states = {
        "p5-spot-1": _state("p5-spot-1", "ALLOCATED+CLOUD+POWERING_UP"),
        "p5-spot-2": _state("p5-spot-2", "ALLOCATED+CLOUD+POWERING_UP"),
        # Resumed, the ResumeProgram not yet back: no instance at all, and nothing to judge yet.
        "p5-spot-3": _state("p5-spot-3", "ALLOCATED+CLOUD+POWERING_UP"),
    }
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert [nodes for nodes, _ in slurm.down] == [["p5-spot-1"]]
    assert ids["p5-spot-1"] in slurm.down[0][1]


def test_a_node_resumed_again_is_not_judged_by_its_previous_instance(aws: Aws, slurm: RecordingSlurm) -> None:
    # p5-od-1's first instance was terminated out of band; its job requeued and resumed it again, and
    # the ResumeProgram has not tagged the new instance yet (stop 23's twice-requeued job).
    first = _launch(aws, slurm, "p5-od-1")["p5-od-1"]
    aws.ec2.terminate_instances(InstanceIds=[first])
    launched = aws.ec2.describe_instances(InstanceIds=[first])["Reservations"][0]["Instances"][0][
        "LaunchTime"
    ]
    ResumeMarks(aws.cfg.state_dir).mark(["p5-od-1"], launched.timestamp() + 120)
    slurm.states = {"p5-od-1": _state("p5-od-1", "ALLOCATED+CLOUD+POWERING_UP")}
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm).down == {}
    # Its new instance (launched after the mark) ending while it boots does take it DOWN.
    t0 = launched.timestamp()
    old, new = (
        fleet.Instance(i, "p5-od-1", "terminated", "", t) for i, t in (("i-old", t0), ("i-new", t0 + 125))
    )
    decided = reconcile.plan(aws.cfg, [old, new], slurm.states, t0 + 130, {"p5-od-1": t0 + 120})
    assert decided.down == {"p5-od-1": "gpucluster: instance i-new terminated while booting"}


def test_a_node_allocated_before_its_resume_program_ran_is_not_judged_by_the_power_up_before(
    aws: Aws, slurm: RecordingSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test rack's twice-requeued job: slurmctld marks a node POWERING_UP when it allocates it, about a
    # second before its ResumeProgram runs; a pass in between saw the previous power-up's resume mark.
    first = _launch(aws, slurm, "p5-spot-1")["p5-spot-1"]
    aws.ec2.terminate_instances(InstanceIds=[first])  # reclaimed; the node went DOWN and was powered down:
    config_file = tmp_path / "power.json"
    config_file.write_text(aws.cfg.to_json())
    monkeypatch.setenv("GPUCLUSTER_POWER_CONFIG", str(config_file))
    assert suspend.main(["p5-spot-1"]) == 0  # the real SuspendProgram marks the power-down
    slurm.states = {"p5-spot-1": _state("p5-spot-1", "ALLOCATED+CLOUD+POWERING_UP")}
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm).down == {}
    # Once its ResumeProgram has run, an instance of this power-up that ends while it boots does count.
    second = _launch(aws, slurm, "p5-spot-1")["p5-spot-1"]
    aws.ec2.terminate_instances(InstanceIds=[second])
    decided = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    # (Within a second here, and moto's launch times have whole seconds, so either instance may be named.)
    assert list(decided.down) == ["p5-spot-1"] and decided.down["p5-spot-1"].endswith(
        "terminated while booting"
    )


def test_without_a_resume_mark_a_booting_node_is_left_to_resume_timeout(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    ended = _launch(aws, slurm, "p5-od-1")["p5-od-1"]
    aws.ec2.terminate_instances(InstanceIds=[ended])
    shutil.rmtree(Path(aws.cfg.state_dir) / "resumed")  # a controller rebuilt since, say
    slurm.states = {"p5-od-1": _state("p5-od-1", "ALLOCATED+CLOUD+POWERING_UP")}
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm).down == {}


def test_instances_no_node_claims_are_reaped_but_not_another_clusters_or_a_young_untagged_one(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    image = aws.ec2.describe_images()["Images"][0]["ImageId"]

    def instance(tags: dict[str, str]) -> str:
        made = aws.ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
        aws.ec2.create_tags(Resources=[made], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
        return made

    stray = instance({CLUSTER_TAG: "example", NODE_TAG: "p5-od-99"})  # beyond max_count: no such node
    untagged = instance({CLUSTER_TAG: "example"})  # CreateFleet answered, the node tag not yet written
    other = instance({CLUSTER_TAG: "other", NODE_TAG: "p5-od-1"})
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert set(done.terminate) == {stray}
    later = reconcile.reconcile(
        aws.cfg, ec2=aws.ec2, slurm=slurm, now=time.time() + reconcile.UNTAGGED_GRACE_S + 60
    )
    assert set(later.terminate) == {untagged}
    assert other in _live(aws)


def test_of_two_instances_for_one_node_the_one_it_registered_from_stays(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    first = _launch(aws, slurm, "p5-od-1")["p5-od-1"]
    time.sleep(1.1)  # EC2 launch times have whole seconds: the second is the newer
    second = _launch(aws, slurm, "p5-od-1")["p5-od-1"]
    described = aws.ec2.describe_instances(InstanceIds=[first])["Reservations"][0]["Instances"][0]
    slurm.states = {
        "p5-od-1": NodeState("p5-od-1", "IDLE", frozenset({"CLOUD"}), address=described["PrivateIpAddress"])
    }
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert done.terminate == {second: f"p5-od-1 runs on {first}"}


def test_down_nodes_return_at_once_or_after_the_unavailable_window_for_a_capacity_error(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    now = time.time()
    capacity = (
        "gpucluster: InsufficientInstanceCapacity: We currently do not have sufficient p5.48xlarge capacity"
    )
    slurm.states = {
        "p5-spot-1": _state("p5-spot-1", "DOWN+CLOUD+POWERED_DOWN", capacity, now - 60),
        "p5-spot-2": _state(
            "p5-spot-2", "DOWN+CLOUD+POWERED_DOWN", capacity, now - aws.cfg.unavailable_seconds - 1
        ),
        "p5-od-1": _state("p5-od-1", "DOWN+CLOUD", "gpucluster: instance gone (spot reclaimed)", now - 5),
        "gpu-a01": _state("gpu-a01", "DOWN", "Not responding", now - 9999),  # a rack node: never ours
    }
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, now=now)
    assert sorted(slurm.returned) == ["p5-od-1", "p5-spot-2"]


def test_a_down_node_with_an_instance_loses_the_instance_first(aws: Aws, slurm: RecordingSlurm) -> None:
    ids = _launch(aws, slurm, "p5-od-1")
    slurm.states = {"p5-od-1": _state("p5-od-1", "DOWN+CLOUD", "Not responding", time.time() - 1000)}
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert done.terminate == {ids["p5-od-1"]: "p5-od-1 is DOWN"}
    assert slurm.returned == []  # returned on the next pass, once no instance is live
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert slurm.returned == ["p5-od-1"]


def test_static_nodes_are_kept_powered_up(aws: Aws, slurm: RecordingSlurm) -> None:
    groups = tuple(dataclasses.replace(g, min_count=1) if g.name == "p5-od" else g for g in aws.cfg.groups)
    cfg = dataclasses.replace(aws.cfg, groups=groups)
    slurm.states = {
        "p5-od-1": _state("p5-od-1", "IDLE+CLOUD+POWERED_DOWN"),  # static: min_count 1
        "p5-od-2": _state("p5-od-2", "IDLE+CLOUD+POWERED_DOWN"),
        "p5-spot-1": _state("p5-spot-1", "IDLE+CLOUD+POWERED_DOWN"),
    }
    reconcile.reconcile(cfg, ec2=aws.ec2, slurm=slurm)
    assert slurm.powered_up == ["p5-od-1"]
    slurm.states["p5-od-1"] = _state("p5-od-1", "IDLE+CLOUD+POWERING_UP")
    reconcile.reconcile(cfg, ec2=aws.ec2, slurm=slurm)
    assert slurm.powered_up == ["p5-od-1"]  # not asked twice


def test_a_spot_drain_is_cleared_once_the_node_is_off_but_an_operators_drain_stays(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    slurm.states = {
        "p5-spot-1": _state(
            "p5-spot-1", "IDLE+DRAIN+CLOUD+POWERED_DOWN", "gpucluster: spot interruption: terminate at x"
        ),
        "p5-spot-2": _state("p5-spot-2", "IDLE+DRAIN+CLOUD+POWERED_DOWN", "bad DIMM"),
        "p5-od-1": _state("p5-od-1", "IDLE+DRAIN+CLOUD", "gpucluster: spot rebalance recommendation at x"),
    }
    _launch(aws, slurm, "p5-od-1")  # still running: its drain stays until it is off
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert slurm.resumed == ["p5-spot-1"]


def test_a_cloud_node_its_health_check_drained_is_powered_down_once_idle_and_freed_once_off(
    aws: Aws, slurm: RecordingSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replacement: power down (the SuspendProgram ends the instance), then clear the drain."""
    ids = _launch(aws, slurm, "p5-od-1", "p5-od-2", "p5-od-3", "p5-od-4")
    failed = "gpucluster-health: XID_79: Xid 79 on GPU 0000:2a:00"
    slurm.states = {
        "p5-od-1": _state("p5-od-1", "IDLE+DRAIN+CLOUD", failed),
        "p5-od-2": _state("p5-od-2", "MIXED+DRAIN+CLOUD", failed),  # a job still runs: it finishes first
        "p5-od-3": _state("p5-od-3", "IDLE+DRAIN+CLOUD", "bad DIMM, ticket 4711"),  # an operator's
        "p5-od-4": _state("p5-od-4", "IDLE+DRAIN+CLOUD+POWERING_UP", failed),  # never while powering up
    }
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert done.replace == {"p5-od-1": failed} and slurm.returned == ["p5-od-1"]
    assert f"replace p5-od-1: power down ({failed})" in done.lines()
    assert done.terminate == {} and slurm.resumed == []
    # Slurm ran the SuspendProgram: the instance ended, the node is off and still drained by the check.
    config_file = tmp_path / "power.json"
    config_file.write_text(aws.cfg.to_json())
    monkeypatch.setenv("GPUCLUSTER_POWER_CONFIG", str(config_file))
    assert suspend.main(["p5-od-1"]) == 0
    slurm.states["p5-od-1"] = _state("p5-od-1", "IDLE+DRAIN+CLOUD+POWERED_DOWN", failed)
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm)
    assert slurm.resumed == ["p5-od-1"] and slurm.returned == ["p5-od-1"]  # free for a new instance
    assert ids["p5-od-1"] not in _live(aws) and ids["p5-od-3"] in _live(aws)
