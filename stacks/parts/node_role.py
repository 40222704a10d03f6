"""The GPU node role: read/write under the cluster's checkpoint prefix and read its munge key; no more."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from stacks.parts.acks import acknowledge

CHECKPOINT_OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)


class NodeRole(Construct):
    """Least-privilege instance role for the cluster's cloud nodes."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        bucket_arn: str | None,
        prefix: str,
        key_arn: str | None,
        munge_key_parameter: str,
        munge_key_arn: str,
        bucket_label: str,
    ) -> None:
        super().__init__(scope, id_)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="GPU nodes: checkpoint prefix read/write and the munge key",
        )
        region = cdk.Stack.of(self).region
        statements = [
            iam.PolicyStatement(
                actions=["ssm:GetParameter"],
                resources=[
                    cdk.Arn.format(
                        cdk.ArnComponents(
                            service="ssm", resource="parameter", resource_name=munge_key_parameter.lstrip("/")
                        ),
                        cdk.Stack.of(self),
                    )
                ],
            ),
            # Decrypt the SecureString through SSM only, never the key directly.
            iam.PolicyStatement(
                actions=["kms:Decrypt"],
                resources=[munge_key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"ssm.{region}.amazonaws.com"}},
            ),
        ]
        if bucket_arn is not None:
            statements += _checkpoint_statements(bucket_arn, prefix, key_arn)
        # A managed policy (not inline) so auditors see it as a reusable, versioned document.
        self.policy = iam.ManagedPolicy(self, "Policy", statements=statements, roles=[self.role])
        if bucket_arn is not None:
            acknowledge(
                self.policy,
                {
                    f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_label}/{prefix}/*]": (
                        "Checkpoint objects have run-chosen names; access is confined to the cluster's "
                        "prefix of its own bucket, the narrowest grant that lets jobs write checkpoints."
                    ),
                },
            )


def _checkpoint_statements(bucket_arn: str, prefix: str, key_arn: str | None) -> list[iam.PolicyStatement]:
    """List the prefix, read/write objects under it, use the bucket key through S3 only."""
    statements = [
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        ),
        iam.PolicyStatement(actions=list(CHECKPOINT_OBJECT_ACTIONS), resources=[f"{bucket_arn}/{prefix}/*"]),
    ]
    if key_arn is not None:
        statements.append(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"s3.{cdk.Aws.REGION}.amazonaws.com"}},
            )
        )
    return statements
