"""`cdk deploy` of the capacity stack, as far as the emulated account needs it.

moto's CloudFormation cannot create these stacks (../shared/notes/cloud-node-facts.md), so this walks the
synthesized Capacity template and creates, in the emulated EC2 and SSM, exactly the resources the power
programs and the nodes use: security groups, placement group names, the launch templates (their
LaunchTemplateData as synthesized, user data included), the SSM parameters, the spot events queue and the
roles STS hands sessions of (moto applies no IAM policy, so their policies stay out), plus the checkpoint
bucket the Capacity stack imports. Intrinsics resolve to what the emulated resources are called.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import aws_cdk as cdk

from gpucluster.clusterfile import Cluster
from gpucluster_rack import ROOT
from stacks.cluster_app import build

CDK_CONTEXT: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
DROPPED = object()  # a value with no emulated counterpart: its key is left out


def synth_capacity(cluster: Cluster, source: str, outdir: Path) -> dict[str, Any]:
    """The synthesized Capacity template of a cluster (no validation plugins: tests/stacks runs them)."""
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stacks = build(app, cluster, source=source)
    app.synth()
    assert stacks.capacity is not None
    path = outdir / f"{stacks.capacity.artifact_id}.template.json"
    template: dict[str, Any] = json.loads(path.read_text())
    return template


class Deployer:
    """Creates a template's resources in the emulated account and resolves intrinsics to their ids."""

    def __init__(
        self,
        ec2: Any,
        ssm: Any,
        *,
        vpc_cidr: str,
        subnet_cidr: str,
        zone: str,
        more: Callable[[str], Any] | None = None,
        bucket: str = "",
    ) -> None:
        """An emulated account with one VPC and subnet, ready to deploy templates into.

        more(service) gives further clients (iam, sqs, s3) when the template has their resources;
        bucket names the checkpoint bucket (the Checkpoints stack's, which the Capacity stack imports).
        """
        self.ec2, self.ssm, self.more = ec2, ssm, more
        self.vpc = ec2.create_vpc(CidrBlock=vpc_cidr)["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=self.vpc, CidrBlock=subnet_cidr, AvailabilityZone=zone)
        self.subnet = subnet["Subnet"]["SubnetId"]
        self.image = ec2.describe_images()["Images"][0]["ImageId"]
        self.physical: dict[str, str] = {}
        self.arns: dict[str, str] = {}
        self.bucket_arn = ""
        if bucket and more is not None:
            s3 = more("s3")
            s3.create_bucket(Bucket=bucket)
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
            self.bucket_arn = f"arn:aws:s3:::{bucket}"

    def deploy(self, template: dict[str, Any]) -> dict[str, str]:
        """Create the supported resources in dependency order; returns logical id → physical id."""
        resources = template["Resources"]
        for kind, create in (
            ("AWS::EC2::SecurityGroup", self._security_group),
            ("AWS::EC2::PlacementGroup", self._placement_group),
            ("AWS::EC2::LaunchTemplate", self._launch_template),
            ("AWS::IAM::Role", self._role),
            ("AWS::SQS::Queue", self._queue),
            ("AWS::SSM::Parameter", self._parameter),
        ):
            if kind in ("AWS::IAM::Role", "AWS::SQS::Queue") and self.more is None:
                continue
            for logical, resource in resources.items():
                if resource["Type"] == kind:
                    self.physical[logical] = create(logical, resource.get("Properties", {}))
        return self.physical

    def resolve(self, value: Any) -> Any:
        """A template value with its intrinsics replaced by the emulated resources' ids."""
        if isinstance(value, list):
            return [v for v in (self.resolve(v) for v in value) if v is not DROPPED]
        if not isinstance(value, dict):
            return value
        intrinsic = next((name for name in value if name in self._INTRINSICS), None)
        if intrinsic is not None:
            return self._INTRINSICS[intrinsic](self, value[intrinsic])
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not DROPPED and v != {}}

    def _ref(self, name: str) -> Any:
        if name in self.physical:
            return self.physical[name]
        return self.image if name.startswith("SsmParameterValue") else DROPPED

    def _get_att(self, args: list[str]) -> Any:
        logical, attribute = args
        if attribute == "Arn":
            return self.arns.get(logical, DROPPED)
        return self.physical.get(logical, DROPPED) if attribute == "GroupId" else DROPPED

    def _import_value(self, name: Any) -> Any:
        if "Subnet" in str(name):
            return self.subnet
        return self.bucket_arn if "BucketArn" in str(name) and self.bucket_arn else DROPPED

    def _select(self, args: list[Any]) -> Any:
        index, values = args
        resolved = self.resolve(values)
        return resolved[int(index)] if isinstance(resolved, list) else DROPPED

    def _split(self, args: list[Any]) -> Any:
        separator, text = args
        resolved = self.resolve(text)
        return str(resolved).split(separator) if resolved is not DROPPED else DROPPED

    def _base64(self, text: Any) -> str:
        return base64.b64encode(str(self.resolve(text)).encode()).decode()

    def _join(self, args: list[Any]) -> str:
        separator, parts = args
        return str(separator).join(str(self.resolve(p)) for p in parts)

    _INTRINSICS: ClassVar[dict[str, Callable[[Deployer, Any], Any]]] = {
        "Ref": _ref,
        "Fn::GetAtt": _get_att,
        "Fn::ImportValue": _import_value,
        "Fn::Base64": _base64,
        "Fn::Join": _join,
        "Fn::Select": _select,
        "Fn::Split": _split,
    }

    def _security_group(self, logical: str, props: dict[str, Any]) -> str:
        answer = self.ec2.create_security_group(
            GroupName=logical, Description=props.get("GroupDescription", logical), VpcId=self.vpc
        )
        group_id: str = answer["GroupId"]
        return group_id

    def _placement_group(self, logical: str, props: dict[str, Any]) -> str:
        # moto 5.2.5 implements no placement groups and ignores the fleet override's: the name is enough.
        return logical

    def _launch_template(self, logical: str, props: dict[str, Any]) -> str:
        data = self.resolve(props["LaunchTemplateData"])
        answer = self.ec2.create_launch_template(
            LaunchTemplateName=props.get("LaunchTemplateName", logical), LaunchTemplateData=data
        )
        template_id: str = answer["LaunchTemplate"]["LaunchTemplateId"]
        return template_id

    def _role(self, logical: str, props: dict[str, Any]) -> str:
        # moto applies no IAM policy: the role exists so STS can hand out its sessions.
        assert self.more is not None
        trust = {"Version": "2012-10-17", "Statement": []}
        answer = self.more("iam").create_role(
            RoleName=logical[:64], AssumeRolePolicyDocument=json.dumps(trust)
        )
        self.arns[logical] = answer["Role"]["Arn"]
        return str(answer["Role"]["RoleName"])

    def _queue(self, logical: str, props: dict[str, Any]) -> str:
        assert self.more is not None
        url: str = self.more("sqs").create_queue(QueueName=props.get("QueueName", logical[:80]))["QueueUrl"]
        return url

    def _parameter(self, logical: str, props: dict[str, Any]) -> str:
        name = props["Name"]
        value = self.resolve(props["Value"])
        self.ssm.put_parameter(Name=name, Type=props.get("Type", "String"), Value=value)
        return str(name)
