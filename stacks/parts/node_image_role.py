"""The image build instance's role: Systems Manager for Image Builder, its component, the playbook bundle."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from stacks.parts.acks import acknowledge
from stacks.tags import ROLE_TAG

SSM_CORE = "AmazonSSMManagedInstanceCore"


class NodeImageRole(Construct):
    """Least-privilege instance profile of the build instance; nothing of the cluster's data."""

    def __init__(self, scope: Construct, id_: str, *, bundle_object_arn: str, component_arn: str) -> None:
        super().__init__(scope, id_)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="Node image build: Image Builder's agent, its component and the playbook bundle",
            # Image Builder drives the build through the SSM agent; this is the policy AWS documents for it.
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(SSM_CORE)],
        )
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(actions=["s3:GetObject"], resources=[bundle_object_arn]),
                iam.PolicyStatement(actions=["imagebuilder:GetComponent"], resources=[component_arn]),
            ],
        )
        self.instance_profile = iam.CfnInstanceProfile(
            self, "InstanceProfile", roles=[self.role.role_name], path="/"
        )
        acknowledge(
            self.role,
            {
                f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{SSM_CORE}]": (
                    "Image Builder runs its build steps through the SSM agent; AWS documents this managed "
                    "policy as the instance profile's minimum; the build instance lives only for the build."
                ),
            },
        )
        cdk.Tags.of(self.role).add(ROLE_TAG, "node-image-build")
