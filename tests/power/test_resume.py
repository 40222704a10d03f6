"""The ResumeProgram against emulated EC2: one all-or-nothing fleet per job and group, tags, refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from gpucluster.names import GROUP_TAG, NODE_TAG
from gpucluster.power import capacity, config, fleet, resume
from gpucluster.power.resume import Request
from gpucluster.power.unavailable import Unavailable
from tests.power.conftest import Aws, RecordingSlurm


def _live(aws: Aws) -> dict[str, dict[str, str]]:
    """Running or pending instances by node tag, with all their tags."""
    found: dict[str, dict[str, str]] = {}
    for reservation in aws.ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            if instance["State"]["Name"] in ("pending", "running"):
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                found[tags.get(NODE_TAG, instance["InstanceId"])] = tags
    return found


class FleetAnswers:
    """The emulated EC2 client, except that create_fleet answers as told (capacity errors, throttling)."""

    def __init__(self, ec2: Any, *answers: Any) -> None:
        self._ec2, self._answers, self.calls = ec2, list(answers), 0

    def create_fleet(self, **request: Any) -> Any:
        self.calls += 1
        answer = self._answers.pop(0) if self._answers else None
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(request)
        return answer if answer is not None else self._ec2.create_fleet(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


def _error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"emulated {code}"}}, "CreateFleet")


def test_requests_follow_the_resume_file_then_the_rest(tmp_path: Path) -> None:
    resume_file = tmp_path / "resume.json"
    resume_file.write_text(
        json.dumps(
            {
                "all_nodes_resume": "p5-spot-[1-3],p5-od-1",
                "jobs": [{"job_id": 7, "nodes_resume": "p5-spot-[1-2]", "nodes_alloc": "p5-spot-[1-2]"}],
            }
        )
    )
    assert resume.requests("p5-spot-[1-3],p5-od-1", str(resume_file)) == [
        Request(("p5-spot-1", "p5-spot-2"), 7),
        Request(("p5-spot-3", "p5-od-1")),
    ]
    assert resume.requests("p5-od-[1-2]", None) == [Request(("p5-od-1", "p5-od-2"))]


def test_a_job_launches_all_its_nodes_in_one_fleet_tagged_with_their_names(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    launches = resume.resume(
        aws.cfg,
        [Request(("p5-spot-1", "p5-spot-2"), 7), Request(("p5-od-1",))],
        ec2=aws.ec2,
        ssm=aws.ssm,
        slurm=slurm,
    )
    assert [(launch.group, sorted(launch.instances), launch.error) for launch in launches] == [
        ("p5-spot", ["p5-spot-1", "p5-spot-2"], None),
        ("p5-od", ["p5-od-1"], None),
    ]
    live = _live(aws)
    assert sorted(live) == ["p5-od-1", "p5-spot-1", "p5-spot-2"]
    for node, tags in live.items():
        assert tags["gpucluster:cluster"] == "example" and tags["Name"] == node
        assert tags[GROUP_TAG] == node.rsplit("-", 1)[0]
    assert slurm.down == []


def test_the_fleet_request_is_all_or_nothing_in_one_type_and_zone(aws: Aws) -> None:
    spot = next(g for g in aws.cfg.groups if g.market == "spot")
    deployed = resume.capacity.read(aws.ssm, aws.cfg.capacity_parameter)[spot.name]
    request = fleet.fleet_request(aws.cfg, spot, deployed, 4)
    assert request["Type"] == "instant"
    assert request["SpotOptions"] == {
        "AllocationStrategy": "price-capacity-optimized",
        "SingleInstanceType": True,
        "SingleAvailabilityZone": True,
        "MinTargetCapacity": 4,
    }
    overrides = request["LaunchTemplateConfigs"][0]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == ["p5.48xlarge", "p5e.48xlarge"]
    assert {o["SubnetId"] for o in overrides} == {aws.subnet}


def test_a_capacity_block_launches_as_its_own_capacity_type_without_reservation_options(aws: Aws) -> None:
    # EC2 rejects CapacityReservationOptions with capacity-block; the block is named in the launch template.
    block = config.GroupConfig(
        name="h200-block", market="capacity-block", instance_types=("p5e.48xlarge",), max_count=2
    )
    deployed = capacity.DeployedGroup(
        launch_template_id="lt-0123", subnet_ids=(aws.subnet,), capacity_reservation_id="cr-0123456789abcdef0"
    )
    request = fleet.fleet_request(aws.cfg, block, deployed, 2)
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "CapacityReservationOptions" not in request["OnDemandOptions"]
    assert request["OnDemandOptions"]["MinTargetCapacity"] == 2
    reserved = dataclasses.replace(block, market="on-demand")
    on_demand = fleet.fleet_request(aws.cfg, reserved, deployed, 2)
    assert on_demand["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert on_demand["OnDemandOptions"]["CapacityReservationOptions"] == {
        "UsageStrategy": "use-capacity-reservations-first"
    }


def test_no_capacity_downs_the_nodes_with_the_code_and_skips_the_group(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    no_capacity = {
        "Instances": [],
        "Errors": [{"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "none"}],
    }
    ec2 = FleetAnswers(aws.ec2, no_capacity)
    launches = resume.resume(
        aws.cfg,
        [Request(("p5-spot-1", "p5-spot-2"), 8), Request(("p5-od-1",), 9)],
        ec2=ec2,
        ssm=aws.ssm,
        slurm=slurm,
        now=1000.0,
    )
    assert launches[0].error == "InsufficientInstanceCapacity: none"
    assert slurm.down == [(["p5-spot-1", "p5-spot-2"], "gpucluster: InsufficientInstanceCapacity: none")]
    assert sorted(_live(aws)) == ["p5-od-1"]  # the other group still launched
    assert Unavailable(aws.cfg.state_dir).until("p5-spot", 1000.0) == 1000.0 + aws.cfg.unavailable_seconds
    # Within the window the group is not asked again; after it, it is.
    resume.resume(aws.cfg, [Request(("p5-spot-3",))], ec2=ec2, ssm=aws.ssm, slurm=slurm, now=1100.0)
    assert ec2.calls == 2 and "unavailable until" in slurm.down[-1][1]
    resume.resume(aws.cfg, [Request(("p5-spot-3",))], ec2=ec2, ssm=aws.ssm, slurm=slurm, now=1000.0 + 601)
    assert ec2.calls == 3 and "p5-spot-3" in _live(aws)


def test_part_of_a_job_never_stays_running(aws: Aws, slurm: RecordingSlurm) -> None:
    def one_of_two(request: dict[str, Any]) -> dict[str, Any]:
        template = request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]
        reservation = aws.ec2.run_instances(
            LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"]},
            MinCount=1,
            MaxCount=1,
            TagSpecifications=request["TagSpecifications"],
        )
        ids = [i["InstanceId"] for i in reservation["Instances"]]
        return {"Instances": [{"InstanceIds": ids}], "Errors": []}

    launches = resume.resume(
        aws.cfg,
        [Request(("p5-od-1", "p5-od-2"), 3)],
        ec2=FleetAnswers(aws.ec2, one_of_two),
        ssm=aws.ssm,
        slurm=slurm,
    )
    assert launches[0].instances == {} and "1 of 2" in (launches[0].error or "")
    assert _live(aws) == {}
    assert slurm.down[0][0] == ["p5-od-1", "p5-od-2"]


def test_only_throttling_is_retried(aws: Aws, slurm: RecordingSlurm) -> None:
    throttled = FleetAnswers(aws.ec2, _error("RequestLimitExceeded"), _error("RequestLimitExceeded"))
    launches = resume.resume(aws.cfg, [Request(("p5-od-1",))], ec2=throttled, ssm=aws.ssm, slurm=slurm)
    assert throttled.calls == 3 and launches[0].error is None
    limited = FleetAnswers(aws.ec2, _error("VcpuLimitExceeded"))
    launches = resume.resume(aws.cfg, [Request(("p5-od-2",))], ec2=limited, ssm=aws.ssm, slurm=slurm)
    assert limited.calls == 1 and launches[0].error == "VcpuLimitExceeded: emulated VcpuLimitExceeded"
    assert slurm.down[-1] == (["p5-od-2"], "gpucluster: VcpuLimitExceeded: emulated VcpuLimitExceeded")


def test_a_name_that_is_no_cloud_node_is_set_down(aws: Aws, slurm: RecordingSlurm) -> None:
    resume.resume(aws.cfg, [Request(("gpu-a01", "p5-od-99"))], ec2=aws.ec2, ssm=aws.ssm, slurm=slurm)
    assert [nodes for nodes, _ in slurm.down] == [["gpu-a01"], ["p5-od-99"]]
    assert _live(aws) == {}
