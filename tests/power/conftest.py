"""An emulated AWS (moto, in process) holding what `cdk deploy` would: a subnet, launch templates and
the capacity parameter the power programs read; the product's real boto3 clients talk to it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpucluster.clusterfile import load
from gpucluster.power import config
from gpucluster.power.slurm import NodeState
from tests.conftest import ROOT


@dataclass
class Aws:
    """Clients on the emulated account and the cluster's power configuration."""

    ec2: Any
    ssm: Any
    cfg: config.PowerConfig
    subnet: str


class RecordingSlurm:
    """Answers node states as a test sets them and records what the power programs tell slurmctld
    (the rack tests use the real scontrol)."""

    def __init__(self) -> None:
        self.down: list[tuple[list[str], str]] = []
        self.returned: list[str] = []
        self.powered_up: list[str] = []
        self.states: dict[str, NodeState] = {}
        self.drained: list[tuple[list[str], str]] = []
        self.signalled: list[tuple[str, str]] = []
        self.resumed: list[str] = []

    def set_down(self, nodes: list[str], reason: str) -> None:
        self.down.append((list(nodes), reason))

    def power_down(self, nodes: list[str]) -> None:
        self.returned += nodes

    def power_up(self, nodes: list[str]) -> None:
        self.powered_up += nodes

    def nodes(self) -> dict[str, NodeState]:
        return dict(self.states)

    def drain(self, nodes: list[str], reason: str) -> None:
        self.drained.append((list(nodes), reason))

    def signal_jobs(self, node: str, signal: str) -> None:
        self.signalled.append((node, signal))

    def resume(self, nodes: list[str]) -> None:
        self.resumed += nodes


@pytest.fixture
def slurm() -> RecordingSlurm:
    return RecordingSlurm()


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    cfg = dataclasses.replace(
        config.from_cluster(load(ROOT / "clusters" / "example.yaml").cluster), state_dir=str(tmp_path)
    )
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=cfg.region)
        ssm = boto3.client("ssm", region_name=cfg.region)
        vpc = ec2.create_vpc(CidrBlock="10.100.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.100.0.0/17", AvailabilityZone="us-east-1a")[
            "Subnet"
        ]["SubnetId"]
        image = ec2.describe_images()["Images"][0]["ImageId"]
        groups = {}
        for group in cfg.groups:
            template = ec2.create_launch_template(
                LaunchTemplateName=f"gpucluster-{cfg.cluster}-{group.name}",
                LaunchTemplateData={"ImageId": image, "InstanceType": group.instance_types[0]},
            )["LaunchTemplate"]["LaunchTemplateId"]
            groups[group.name] = {"launch_template_id": template, "subnet_ids": [subnet]}
        ssm.put_parameter(Name=cfg.capacity_parameter, Type="String", Value=json.dumps({"groups": groups}))
        yield Aws(ec2, ssm, cfg, subnet)
