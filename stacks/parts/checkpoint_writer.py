"""The checkpoint writer role: what a job may do in the checkpoint bucket, handed out per user on the node.

Job users cannot reach the metadata service (the instance role also reads the munge key), so the node's
credential broker (gpucluster.spot.credentials) assumes this role for them, with a session policy that
narrows it to `<prefix>/<user>/`. The role itself is bounded to the cluster's prefix.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.spot.credentials import OBJECT_ACTIONS
from stacks.parts.acks import acknowledge


class CheckpointWriter(Construct):
    """A role only the node role may assume: list, read and write under the prefix, the key via S3 only."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        node_role: iam.IRole,
        bucket_arn: str,
        prefix: str,
        key_arn: str | None,
        bucket_label: str,
    ) -> None:
        super().__init__(scope, id_)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ArnPrincipal(node_role.role_arn),
            description="Job checkpoints: assumed by a node's credential broker for one user's prefix",
            max_session_duration=cdk.Duration.hours(1),
        )
        # A managed policy (not inline) so auditors see it as a reusable, versioned document.
        self.policy = iam.ManagedPolicy(
            self, "Policy", statements=_statements(bucket_arn, prefix, key_arn), roles=[self.role]
        )
        acknowledge(
            self.policy,
            {
                f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_label}/{prefix}/*]": (
                    "Checkpoint objects have run-chosen names; access is confined to the cluster's "
                    "prefix of its own bucket, and each session further to one user's prefix."
                ),
            },
        )


def _statements(bucket_arn: str, prefix: str, key_arn: str | None) -> list[iam.PolicyStatement]:
    """List the prefix, read/write objects under it, use the bucket key through S3 only."""
    statements = [
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        ),
        iam.PolicyStatement(actions=list(OBJECT_ACTIONS), resources=[f"{bucket_arn}/{prefix}/*"]),
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
