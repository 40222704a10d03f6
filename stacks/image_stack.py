"""Image stack: EC2 Image Builder makes the cloud node AMI from the same roles as the racks."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from gpucluster.ansible_vars import image_vars
from gpucluster.clusterfile.model import Cluster
from gpucluster.names import image_ami_parameter, image_key_alias, image_resource_name
from stacks.parts.acks import acknowledge
from stacks.parts.encryption_key import EncryptionKey
from stacks.parts.network import ClusterNetwork
from stacks.parts.node_image_component import BUILD_PYTHON, NodeImageComponent
from stacks.parts.node_image_pipeline import NodeImagePipeline
from stacks.parts.node_image_recipe import NodeImageRecipe
from stacks.parts.node_image_role import NodeImageRole
from stacks.parts.playbook_bundle import PlaybookBundle
from stacks.tags import CLUSTER_TAG, ROLE_TAG

# Image Builder versions are <major>.<minor>.<patch>, each below 2**30.
_VERSION_PART = 2**30


def pins_version(cluster: Cluster) -> str:
    """Recipe version from the pinned versions: major is the driver branch, minor a digest of every pin."""
    pins = json.dumps(cluster.versions.model_dump(mode="json"), sort_keys=True)
    digest = int(hashlib.sha256(pins.encode()).hexdigest(), 16) % _VERSION_PART
    return f"{int(cluster.versions.nvidia_driver_branch)}.{digest}.0"


def content_digest(*parts: str) -> str:
    """sha256 of the inputs of an immutable Image Builder resource; its name carries it."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class ImageStack(cdk.Stack):
    """Component, recipe, build infrastructure and distribution of the node image; the AMI id goes to SSM."""

    def __init__(
        self, scope: Construct, id_: str, *, cluster: Cluster, network: ClusterNetwork, **kwargs: Any
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        aws = cluster.aws
        assert aws is not None
        spec = aws.node_image
        acknowledge(
            self,
            {
                "Annotation::@aws-cdk/core:crossStackReferencesDefaultStrong": (
                    "Strong references are intended: the network must not be deleted under an image build."
                ),
            },
        )
        self.ami_parameter = image_ami_parameter(cluster.name)
        self.version = pins_version(cluster)
        tags = {CLUSTER_TAG: cluster.name, ROLE_TAG: "node-image"}
        self.key = EncryptionKey(
            self, "Key", alias=image_key_alias(cluster.name), description="Node image EBS snapshots"
        ).key
        _allow_service_roles(self.key)
        self.bundle = PlaybookBundle(self, "Bundle").asset
        # Immutable resources: their names carry a digest of what they are built from, so a changed
        # bundle or pin replaces them instead of colliding with the old name and version.
        component_digest = content_digest(self.bundle.asset_hash, self.version, spec.base)
        self.component = NodeImageComponent(
            self,
            "Component",
            name=image_resource_name(cluster.name, f"playbook-{component_digest}"),
            version=self.version,
            bundle_url=self.bundle.s3_object_url,
            python=BUILD_PYTHON[spec.base],
            extra_vars=image_vars(cluster),
            key_arn=self.key.key_arn,
        ).component
        recipe_digest = content_digest(component_digest, spec.parent_parameter, str(spec.root_volume_gib))
        self.recipe = NodeImageRecipe(
            self,
            "Recipe",
            name=image_resource_name(cluster.name, f"recipe-{recipe_digest}"),
            version=self.version,
            parent_parameter=spec.parent_parameter,
            component_arn=self.component.attr_arn,
            root_volume_gib=spec.root_volume_gib,
            key_arn=self.key.key_arn,
            ami_tags={**tags, "gpucluster:versions": self.version},
        ).recipe
        self.role = NodeImageRole(
            self,
            "BuildRole",
            bundle_object_arn=self.bundle.bucket.arn_for_objects(self.bundle.s3_object_key),
            component_arn=self.component.attr_arn,
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "BuildSecurityGroup",
            vpc=network.vpc,
            description="Node image build instance: HTTPS and HTTP out for packages; nothing in",
            allow_all_outbound=False,
        )
        self.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: S3, SSM, packages"
        )
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(80), "HTTP: the Ubuntu archive")
        self.pipeline = NodeImagePipeline(
            self,
            "Build",
            name=image_resource_name(cluster.name, "build"),
            recipe_arn=self.recipe.attr_arn,
            instance_profile_name=self.role.instance_profile.ref,
            instance_type=spec.build_instance_type,
            subnet=network.image_build_subnet,
            security_group=self.security_group,
            ami_parameter=self.ami_parameter,
            tags=tags,
        )


def _allow_service_roles(key: kms.IKey) -> None:
    """Image Builder encrypts the snapshots; EC2 Fleet launches nodes from them (AWS's key policy).

    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-fleet-prerequisites.html#ec2-fleet-service-linked-roles
    """
    account = cdk.Aws.ACCOUNT_ID
    for service, role in (
        ("imagebuilder.amazonaws.com", "AWSServiceRoleForImageBuilder"),
        ("ec2fleet.amazonaws.com", "AWSServiceRoleForEC2Fleet"),
    ):
        principal = iam.ArnPrincipal(
            f"arn:{cdk.Aws.PARTITION}:iam::{account}:role/aws-service-role/{service}/{role}"
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[principal],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:DescribeKey",
                ],
                resources=["*"],
            )
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[principal],
                actions=["kms:CreateGrant"],
                resources=["*"],
                conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
            )
        )
