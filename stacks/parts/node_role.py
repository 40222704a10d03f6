"""The GPU node role: read the munge key and the checkpoint access record, assume the writer role; no more."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct


class NodeRole(Construct):
    """Least-privilege instance role for the cluster's cloud nodes (only root on a node can use it)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        parameters: list[str],
        munge_key_arn: str,
    ) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="GPU nodes: the munge key, the checkpoint access record, the checkpoint writer role",
        )
        # A managed policy (not inline) so auditors see it as a reusable, versioned document.
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(
                    actions=["ssm:GetParameter"],
                    resources=[
                        stack.format_arn(service="ssm", resource="parameter", resource_name=p.lstrip("/"))
                        for p in parameters
                    ],
                ),
                # Decrypt the munge key's SecureString through SSM only, never the key directly.
                iam.PolicyStatement(
                    actions=["kms:Decrypt"],
                    resources=[munge_key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"ssm.{stack.region}.amazonaws.com"}},
                ),
            ],
        )

    def may_assume(self, role: iam.IRole) -> None:
        """Let the node's credential broker assume a role (the checkpoint writer)."""
        self.policy.add_statements(iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[role.role_arn]))
