"""A capacity group of mixed GPU models (the example's p5-spot: p5 H100, p5e H200) at run time.

Each model has its own Slurm names; the ResumeProgram launches a name only as its model's instance
types, keeps a capacity error on one model from closing the other, and holds the models together to the
group's max_count. Against emulated EC2 (moto) with the product's boto3 clients.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from gpucluster.names import GROUP_TAG, NODE_TAG
from gpucluster.power import config, fleet, reconcile, resume
from gpucluster.power.resume import Request
from gpucluster.power.slurm import NodeState
from gpucluster.power.unavailable import Unavailable
from tests.power.conftest import Aws, RecordingSlurm
from tests.power.test_resume import FleetAnswers

DOWN_OFF = frozenset({"CLOUD", "POWERED_DOWN"})


def _types(aws: Aws) -> dict[str, str]:
    """Instance type of every live instance, by its node tag."""
    found = {}
    for reservation in aws.ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            if instance["State"]["Name"] in ("pending", "running"):
                found[tags[NODE_TAG]] = instance["InstanceType"]
                assert tags[GROUP_TAG] == "p5-spot"
    return found


def _spot(aws: Aws) -> config.GroupConfig:
    return next(g for g in aws.cfg.groups if g.name == "p5-spot")


def test_the_power_config_names_each_model_apart_and_survives_its_json(aws: Aws, tmp_path: Any) -> None:
    spot = _spot(aws)
    assert spot.models == {"p5-spot": ("p5.48xlarge",), "p5-spot-h200": ("p5e.48xlarge",)}
    path = tmp_path / "power.json"
    path.write_text(aws.cfg.to_json())
    assert config.load(path) == aws.cfg
    assert aws.cfg.group_of("p5-spot-h200-8") == spot and aws.cfg.group_of("p5-spot-h200-9") is None
    assert aws.cfg.group_of("p5-spot-h100-1") is None  # the primary model keeps the group's own names
    assert spot.types_of("p5-spot-3") == ("p5.48xlarge",)
    od = next(g for g in aws.cfg.groups if g.name == "p5-od")
    assert od.models == {} and od.types_of("p5-od-1") == ("p5.48xlarge",)


def test_each_models_names_launch_as_that_models_type_only(aws: Aws, slurm: RecordingSlurm) -> None:
    launches = resume.resume(
        aws.cfg,
        [Request(("p5-spot-h200-1", "p5-spot-h200-2"), 7), Request(("p5-spot-1",), 8)],
        ec2=aws.ec2,
        ssm=aws.ssm,
        slurm=slurm,
    )
    assert [launch.error for launch in launches] == [None, None]
    assert _types(aws) == {
        "p5-spot-h200-1": "p5e.48xlarge",
        "p5-spot-h200-2": "p5e.48xlarge",
        "p5-spot-1": "p5.48xlarge",
    }
    deployed = resume.capacity.read(aws.ssm, aws.cfg.capacity_parameter)["p5-spot"]
    request = fleet.fleet_request(aws.cfg, _spot(aws), deployed, 1, _spot(aws).types_of("p5-spot-h200-1"))
    assert [o["InstanceType"] for o in request["LaunchTemplateConfigs"][0]["Overrides"]] == ["p5e.48xlarge"]


def test_a_capacity_error_on_one_model_leaves_the_other_model_open(aws: Aws, slurm: RecordingSlurm) -> None:
    no_h100 = {
        "Instances": [],
        "Errors": [{"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "no"}],
    }
    ec2 = FleetAnswers(aws.ec2, no_h100)
    resume.resume(aws.cfg, [Request(("p5-spot-1",), 3)], ec2=ec2, ssm=aws.ssm, slurm=slurm, now=1000.0)
    assert slurm.down == [(["p5-spot-1"], "gpucluster: InsufficientInstanceCapacity: no")]
    unavailable = Unavailable(aws.cfg.state_dir)
    assert unavailable.until("p5-spot", 1000.0) is not None
    assert unavailable.until("p5-spot-h200", 1000.0) is None
    # The requeued job, given an H200 name by Slurm, launches there at once.
    launches = resume.resume(
        aws.cfg, [Request(("p5-spot-h200-1",), 3)], ec2=ec2, ssm=aws.ssm, slurm=slurm, now=1010.0
    )
    assert launches[0].error is None and _types(aws) == {"p5-spot-h200-1": "p5e.48xlarge"}


def test_the_models_share_the_groups_max_count(aws: Aws, slurm: RecordingSlurm) -> None:
    small = dataclasses.replace(_spot(aws), max_count=3)
    cfg = dataclasses.replace(aws.cfg, groups=(small,))
    resume.resume(cfg, [Request(("p5-spot-1", "p5-spot-2"), 1)], ec2=aws.ec2, ssm=aws.ssm, slurm=slurm)
    # One call that asks for both models: the second request sees the first one's launch.
    launches = resume.resume(
        cfg,
        [Request(("p5-spot-h200-1",), 2), Request(("p5-spot-h200-2",), 3)],
        ec2=aws.ec2,
        ssm=aws.ssm,
        slurm=slurm,
        now=2000.0,
    )
    assert launches[0].error is None
    assert launches[1].error == "group at max_count 3: 3 running, 1 more asked"
    assert slurm.down == [(["p5-spot-h200-2"], "gpucluster: group at max_count 3: 3 running, 1 more asked")]
    assert sorted(_types(aws)) == ["p5-spot-1", "p5-spot-2", "p5-spot-h200-1"]
    # The refusal is not the model's capacity: the H200 names stay open to the next job.
    assert Unavailable(cfg.state_dir).until("p5-spot-h200", 2000.0) is None


def test_the_reconciler_keeps_a_name_refused_at_max_count_down_for_the_window(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    now = time.time()
    refusal = "gpucluster: group at max_count 8: 8 running, 1 more asked"
    slurm.states = {
        "p5-spot-h200-1": NodeState("p5-spot-h200-1", "DOWN", DOWN_OFF, reason=refusal, reason_time=now - 60),
        "p5-spot-h200-2": NodeState(
            "p5-spot-h200-2",
            "DOWN",
            DOWN_OFF,
            reason=refusal,
            reason_time=now - aws.cfg.unavailable_seconds - 1,
        ),
    }
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, now=now)
    assert slurm.returned == ["p5-spot-h200-2"]
