"""Capacity stack: node role, node security group, one GPU group per capacity group, optional head node."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from gpucluster.clusterfile.model import Cluster
from gpucluster.names import (
    capacity_parameter,
    checkpoint_access_parameter,
    image_ami_parameter,
    munge_key_alias,
    munge_key_parameter,
    spot_events_queue,
)
from gpucluster.render import render
from stacks.checkpoint_stack import CheckpointExports
from stacks.parts.acks import acknowledge
from stacks.parts.checkpoint_writer import CheckpointWriter
from stacks.parts.controller_access import ControllerAccess
from stacks.parts.encryption_key import EncryptionKey
from stacks.parts.gpu_group import GpuGroup
from stacks.parts.head_node import HeadNode
from stacks.parts.network import ClusterNetwork
from stacks.parts.node_role import NodeRole
from stacks.parts.node_security_group import NodeSecurityGroup
from stacks.parts.spot_events import SpotEvents

USER_DATA = "cloud-init/user-data"


class CapacityStack(cdk.Stack):
    """Everything that launches instances; stateless, so it can be replaced without losing data."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: Cluster,
        source: str,
        network: ClusterNetwork,
        checkpoint: CheckpointExports | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        aws = cluster.aws
        assert aws is not None
        # The controller republishes the munge key at every converge, so a lost key loses nothing.
        self.munge_key = EncryptionKey(
            self,
            "MungeKey",
            alias=munge_key_alias(cluster.name),
            description=f"{cluster.name} munge key parameter",
            removal_policy=cdk.RemovalPolicy.DESTROY,
        ).key
        self.node_role = NodeRole(
            self,
            "Nodes",
            parameters=[munge_key_parameter(cluster.name), checkpoint_access_parameter(cluster.name)],
            munge_key_arn=self.munge_key.key_arn,
        )
        self.checkpoint_access = self._checkpoint_access(cluster, checkpoint) if checkpoint else None
        acknowledge(
            self,
            {
                "Annotation::@aws-cdk/core:crossStackReferencesDefaultStrong": (
                    "Strong references are intended: the network must not be deleted under running nodes."
                ),
            },
        )
        self.node_security_group = NodeSecurityGroup(
            self, "NodeNetwork", vpc=network.vpc, vpc_cidr=aws.vpc_cidr, onprem_cidrs=list(aws.onprem_cidrs)
        ).security_group
        image = node_image(cluster)
        self.groups = [
            GpuGroup(
                self,
                group.name,
                group=group,
                vpc=network.vpc,
                image=image,
                role=self.node_role.role,
                user_data=render(cluster, "aws", group=group.name, source=source)[USER_DATA],
                node_group=self.node_security_group,
            )
            for group in aws.capacity
        ]
        self.capacity_parameter = self._publish_capacity(cluster, network)
        self.spot_events = None
        if any(group.market == "spot" for group in aws.capacity):
            self.spot_events = SpotEvents(self, "SpotEvents", queue_name=spot_events_queue(cluster.name))
        head_is_controller = aws.head_node is not None and aws.head_node.name == cluster.slurm.controller
        self.controller: ControllerAccess | None = None
        if aws.controller_access is not None or head_is_controller:
            self.controller = ControllerAccess(
                self,
                "Controller",
                cluster_name=cluster.name,
                controller=cluster.slurm.controller,
                launch_template_ids=[str(g.template.launch_template.launch_template_id) for g in self.groups],
                node_role=self.node_role.role,
                parameters=[capacity_parameter(cluster.name)],
                writable_parameters=[munge_key_parameter(cluster.name)],
                parameter_key_arn=self.munge_key.key_arn,
                events=self.spot_events,
                spec=aws.controller_access,
                head_node=head_is_controller,
            )
        self.head_node = None
        if aws.head_node is not None:
            self.head_node = HeadNode(
                self,
                "Head",
                spec=aws.head_node,
                vpc=network.vpc,
                subnet=network.gpu_subnet,
                subnet_cidr=network.gpu_cidr,
                image=image,
                role=self.controller.role if self.controller and head_is_controller else self.node_role.role,
                security_group=self.node_security_group,
            )

    def _checkpoint_access(self, cluster: Cluster, checkpoint: CheckpointExports) -> ssm.StringParameter:
        """The writer role and where checkpoints go: what a node's credential broker and jobs need."""
        bucket_arn = cdk.Fn.import_value(checkpoint.bucket_arn)
        self.checkpoint_writer = CheckpointWriter(
            self,
            "CheckpointWriter",
            node_role=self.node_role.role,
            bucket_arn=bucket_arn,
            prefix=checkpoint.prefix,
            key_arn=cdk.Fn.import_value(checkpoint.key_arn) if checkpoint.key_arn else None,
            bucket_label=checkpoint.bucket_arn,
        )
        self.node_role.may_assume(self.checkpoint_writer.role)
        record = {
            "bucket": cdk.Fn.select(5, cdk.Fn.split(":", bucket_arn)),  # arn:<partition>:s3:::<name>
            "bucket_arn": bucket_arn,
            "prefix": checkpoint.prefix,
            "role_arn": self.checkpoint_writer.role.role_arn,
        }
        return ssm.StringParameter(
            self,
            "CheckpointAccess",
            parameter_name=checkpoint_access_parameter(cluster.name),
            description="Checkpoint bucket, prefix and writer role, for the nodes' job credential broker",
            string_value=self.to_json_string(record),
        )

    def _publish_capacity(self, cluster: Cluster, network: ClusterNetwork) -> ssm.StringParameter:
        """Per group what the power programs launch: template, subnets, placement, market, types, size.

        The one deployed record of the groups: `stacks.summary` and the nag rules read it too.
        """
        groups = {
            group.spec.name: {
                "launch_template_id": group.template.launch_template.launch_template_id,
                "subnet_ids": [network.gpu_subnet.subnet_id],
                "placement_group": group.placement_group.ref if group.placement_group is not None else None,
                "capacity_reservation_id": group.spec.capacity_reservation_id,
                "market": group.spec.market,
                "instance_types": [group.spec.instance_type, *group.spec.fallback_instance_types],
                "min_count": group.spec.min_count,
                "max_count": group.spec.max_count,
            }
            for group in self.groups
        }
        return ssm.StringParameter(
            self,
            "PowerCapacity",
            parameter_name=capacity_parameter(cluster.name),
            description="Launch templates and subnets of the cloud node groups, for the Slurm power programs",
            string_value=self.to_json_string({"groups": groups}),
        )


def node_image(cluster: Cluster) -> ec2.IMachineImage:
    """The explicit `aws.ami_id`, or the image stack's AMI parameter that CloudFormation resolves."""
    assert cluster.aws is not None
    if cluster.aws.ami_id is not None:
        return ec2.MachineImage.generic_linux({cluster.aws.region: cluster.aws.ami_id})
    # An AWS::SSM::Parameter::Value<AWS::EC2::Image::Id> parameter: no AMI look-up during synth.
    return ec2.MachineImage.from_ssm_parameter(
        image_ami_parameter(cluster.name), os=ec2.OperatingSystemType.LINUX
    )
