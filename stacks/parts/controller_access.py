"""The controller's AWS access: what the power programs may do, and how a rack controller gets it.

One role: launch only from the cluster's launch templates and only instances tagged for the cluster,
tag its own instances, terminate only instances tagged for the cluster, describe, pass only the node
role, read the capacity parameter and write the munge key parameter (with the stack's KMS key). A rack
controller assumes it through IAM Roles Anywhere (a trust anchor on the site's CA, a certificate whose CN
is the controller's name); a cloud head node through its instance profile.
https://docs.aws.amazon.com/rolesanywhere/latest/userguide/getting-started.html
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_rolesanywhere as rolesanywhere
from constructs import Construct

from gpucluster.clusterfile.model.aws import ControllerAccess as AccessSpec
from gpucluster.names import CLUSTER_TAG, NODE_TAG
from stacks.parts.acks import acknowledge
from stacks.parts.spot_events import SpotEvents

# The resource types one CreateFleet launch touches besides the launch template and the instance.
LAUNCH_RESOURCES = ("volume", "network-interface", "subnet", "security-group", "image", "placement-group")
# Describe calls support no resource-level permissions: https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
DESCRIBE = ("ec2:DescribeInstances", "ec2:DescribeTags", "ec2:DescribeLaunchTemplateVersions")


class ControllerAccess(Construct):
    """The controller role with the power programs' policy, and Roles Anywhere for a rack controller."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster_name: str,
        controller: str,
        launch_template_ids: list[str],
        node_role: iam.IRole,
        parameters: list[str],
        writable_parameters: list[str],
        parameter_key_arn: str,
        events: SpotEvents | None,
        spec: AccessSpec | None,
        head_node: bool,
    ) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        anchor = _trust_anchor(self, spec, cluster_name) if spec is not None else None
        principals: list[iam.IPrincipal] = [iam.ServicePrincipal("ec2.amazonaws.com")] if head_node else []
        if anchor is not None:
            # Only a certificate of the site's CA whose CN is the controller's name; Roles Anywhere also
            # tags the session and sets its source identity.
            principals.append(
                iam.ServicePrincipal("rolesanywhere.amazonaws.com").with_conditions(
                    {
                        "ArnEquals": {"aws:SourceArn": anchor.attr_trust_anchor_arn},
                        "StringEquals": {"aws:PrincipalTag/x509Subject/CN": controller},
                    }
                )
            )
        if not principals:
            raise ValueError("the controller role needs a Roles Anywhere anchor or a cloud head node")
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.CompositePrincipal(*principals),
            description=f"Slurm controller {controller}: launch and terminate {cluster_name}'s cloud nodes",
            max_session_duration=cdk.Duration.seconds(spec.session_seconds if spec else 3600),
        )
        if anchor is not None and spec is not None and self.role.assume_role_policy is not None:
            self.role.assume_role_policy.add_statements(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("rolesanywhere.amazonaws.com")],
                    actions=["sts:TagSession", "sts:SetSourceIdentity"],
                    conditions={"ArnEquals": {"aws:SourceArn": anchor.attr_trust_anchor_arn}},
                )
            )
            profile = rolesanywhere.CfnProfile(
                self,
                "Profile",
                name=f"gpucluster-{cluster_name}-controller",
                role_arns=[self.role.role_arn],
                duration_seconds=spec.session_seconds,
                enabled=True,
            )
            cdk.CfnOutput(self, "ProfileArn", value=profile.attr_profile_arn)
            cdk.CfnOutput(self, "TrustAnchorArn", value=anchor.attr_trust_anchor_arn)
        cdk.CfnOutput(self, "RoleArn", value=self.role.role_arn)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            roles=[self.role],
            statements=_statements(
                stack,
                cluster_name,
                launch_template_ids=launch_template_ids,
                node_role=node_role,
                parameters=parameters,
                writable_parameters=writable_parameters,
                parameter_key_arn=parameter_key_arn,
            ),
        )
        if events is not None:
            # The reconciler drains the spot events queue (receive, then delete what it acted on).
            self.policy.add_statements(
                iam.PolicyStatement(
                    actions=["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"],
                    resources=[events.queue.queue_arn],
                ),
                iam.PolicyStatement(
                    actions=["kms:Decrypt"],
                    resources=[events.key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"sqs.{stack.region}.amazonaws.com"}},
                ),
            )
        acknowledge(self.policy, _reasons(stack))


def _trust_anchor(scope: Construct, spec: AccessSpec, cluster_name: str) -> rolesanywhere.CfnTrustAnchor:
    if spec.acm_pca_arn is not None:
        source = rolesanywhere.CfnTrustAnchor.SourceProperty(
            source_type="AWS_ACM_PCA",
            source_data=rolesanywhere.CfnTrustAnchor.SourceDataProperty(acm_pca_arn=spec.acm_pca_arn),
        )
    else:
        source = rolesanywhere.CfnTrustAnchor.SourceProperty(
            source_type="CERTIFICATE_BUNDLE",
            source_data=rolesanywhere.CfnTrustAnchor.SourceDataProperty(
                x509_certificate_data=spec.ca_certificate
            ),
        )
    return rolesanywhere.CfnTrustAnchor(
        scope, "TrustAnchor", name=f"gpucluster-{cluster_name}-controller", source=source, enabled=True
    )


def _arn(stack: cdk.Stack, service: str, resource: str, name: str) -> str:
    return stack.format_arn(service=service, resource=resource, resource_name=name)


def _statements(
    stack: cdk.Stack,
    cluster_name: str,
    *,
    launch_template_ids: list[str],
    node_role: iam.IRole,
    parameters: list[str],
    writable_parameters: list[str],
    parameter_key_arn: str,
) -> list[iam.PolicyStatement]:
    ours = {f"aws:ResourceTag/{CLUSTER_TAG}": cluster_name}
    templates = [_arn(stack, "ec2", "launch-template", i) for i in launch_template_ids]
    return [
        # Launch only from the cluster's launch templates ...
        iam.PolicyStatement(actions=["ec2:CreateFleet", "ec2:RunInstances"], resources=templates),
        iam.PolicyStatement(
            actions=["ec2:CreateFleet", "ec2:RunInstances"],
            resources=[
                _arn(stack, "ec2", "fleet", "*"),
                *(_arn(stack, "ec2", r, "*") for r in LAUNCH_RESOURCES),
            ],
        ),
        # ... only instances tagged for the cluster at creation ...
        iam.PolicyStatement(
            actions=["ec2:CreateFleet", "ec2:RunInstances"],
            resources=[_arn(stack, "ec2", "instance", "*")],
            conditions={"StringEquals": {f"aws:RequestTag/{CLUSTER_TAG}": cluster_name}},
        ),
        iam.PolicyStatement(
            actions=["ec2:CreateTags"],
            resources=[_arn(stack, "ec2", r, "*") for r in ("instance", "volume", "fleet")],
            conditions={"StringEquals": {"ec2:CreateAction": ["CreateFleet", "RunInstances"]}},
        ),
        # ... name them, and terminate nothing else.
        iam.PolicyStatement(
            actions=["ec2:CreateTags"],
            resources=[_arn(stack, "ec2", "instance", "*")],
            conditions={
                "StringEquals": ours,
                "ForAllValues:StringEquals": {"aws:TagKeys": [NODE_TAG, "Name"]},
            },
        ),
        iam.PolicyStatement(
            actions=["ec2:TerminateInstances"],
            resources=[_arn(stack, "ec2", "instance", "*")],
            conditions={"StringEquals": ours},
        ),
        iam.PolicyStatement(actions=list(DESCRIBE), resources=["*"]),
        iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[node_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        iam.PolicyStatement(
            actions=["ssm:GetParameter"],
            resources=[
                _arn(stack, "ssm", "parameter", p.lstrip("/")) for p in parameters + writable_parameters
            ],
        ),
        iam.PolicyStatement(
            actions=["ssm:PutParameter", "ssm:GetParameterHistory"],
            resources=[_arn(stack, "ssm", "parameter", p.lstrip("/")) for p in writable_parameters],
        ),
        # SecureString writes encrypt (and the publisher's compare decrypts) with the stack's key via SSM.
        iam.PolicyStatement(
            actions=["kms:Encrypt", "kms:Decrypt"],
            resources=[parameter_key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"ssm.{stack.region}.amazonaws.com"}},
        ),
    ]


def _reasons(stack: cdk.Stack) -> dict[str, str]:
    region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
    prefix = f"arn:<AWS::Partition>:ec2:{region}:<AWS::AccountId>"
    reasons = {
        f"AwsSolutions::AwsSolutions-IAM5[Resource::{prefix}:fleet/*]": (
            "CreateFleet makes a new fleet id per call; the launch itself is confined to the cluster's "
            "launch templates and to instances tagged for the cluster."
        ),
        f"AwsSolutions::AwsSolutions-IAM5[Resource::{prefix}:instance/*]": (
            "Instance ids are new at every launch: creation requires the cluster tag in the request, and "
            "tagging and termination require it on the instance (conditions on the same statements)."
        ),
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]": (
            "Describe calls support no resource-level permissions; they read, never change."
        ),
    }
    for resource in ("volume", "fleet", *LAUNCH_RESOURCES):
        reasons.setdefault(
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{prefix}:{resource}/*]",
            f"A launch from the cluster's own launch template creates or uses {resource} resources whose ids "
            "are chosen at launch (volumes, interfaces) or by the template (subnet, security groups, image, "
            "placement group); the instance itself is confined by the cluster tag.",
        )
    return reasons
