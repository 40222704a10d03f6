"""SuspendProgram against emulated EC2: terminates exactly the named nodes' instances of this cluster."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpucluster.names import CLUSTER_TAG, NODE_TAG
from gpucluster.power import resume, suspend
from gpucluster.power.resume import Request
from tests.power.conftest import Aws, RecordingSlurm


def _states(aws: Aws) -> dict[str, str]:
    states = {}
    for reservation in aws.ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            states[f"{tags.get('gpucluster:cluster')}/{tags.get(NODE_TAG)}"] = instance["State"]["Name"]
    return states


def test_suspend_terminates_the_named_nodes_only(
    aws: Aws,
    slurm: RecordingSlurm,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    resume.resume(
        aws.cfg, [Request(("p5-od-1", "p5-od-2", "p5-spot-1"))], ec2=aws.ec2, ssm=aws.ssm, slurm=slurm
    )
    # Another cluster's instance with the same node name must survive.
    other = aws.ec2.run_instances(
        ImageId=aws.ec2.describe_images()["Images"][0]["ImageId"], MinCount=1, MaxCount=1
    )
    aws.ec2.create_tags(
        Resources=[other["Instances"][0]["InstanceId"]],
        Tags=[{"Key": CLUSTER_TAG, "Value": "other"}, {"Key": NODE_TAG, "Value": "p5-od-1"}],
    )
    config_file = tmp_path / "power.json"
    config_file.write_text(aws.cfg.to_json())
    monkeypatch.setenv("GPUCLUSTER_POWER_CONFIG", str(config_file))
    assert suspend.main(["p5-od-[1-2],gpu-a01"]) == 0
    assert "terminated 2 instance(s) of 2 node(s)" in capsys.readouterr().out
    # slurmctld keeps no program output: the state directory's log has the line.
    logged = (Path(aws.cfg.state_dir) / "power.log").read_text()
    assert re.search(
        r"^\S+Z gpucluster-suspend: p5-od-\[1-2\],gpu-a01: terminated 2 instance", logged, re.M
    ), logged
    assert _states(aws) == {
        "example/p5-od-1": "terminated",
        "example/p5-od-2": "terminated",
        "example/p5-spot-1": "running",
        "other/p5-od-1": "running",
    }


def test_the_configuration_file_round_trips(aws: Aws, tmp_path: Path) -> None:
    path = tmp_path / "power.json"
    path.write_text(aws.cfg.to_json())
    assert resume.config.load(path) == aws.cfg
    assert json.loads(path.read_text())["capacity_parameter"] == "/gpucluster/example/capacity"
    assert aws.cfg.group_of("p5-spot-8") is not None and aws.cfg.group_of("p5-spot-9") is None


def test_wrong_arguments_get_a_usage_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert suspend.main([]) == 2
    assert resume.main(["p5-od-1", "extra"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "usage: gpucluster-suspend HOSTLIST",
        "usage: gpucluster-resume HOSTLIST",
    ]
