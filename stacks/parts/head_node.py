"""A cloud Slurm head node at a fixed private address: IMDSv2, encrypted gp3 root, no public IP."""

from __future__ import annotations

from ipaddress import IPv4Network

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.clusterfile.model.aws import HeadNode as HeadNodeSpec
from gpucluster.clusterfile.vpc_layout import usable_range
from stacks.parts.acks import acknowledge

ROOT_DEVICE = "/dev/sda1"
ROOT_VOLUME_GIB = 200


class HeadNode(Construct):
    """The Slurm controller instance for clusters whose controller lives in the VPC."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        spec: HeadNodeSpec,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        subnet_cidr: IPv4Network,
        image: ec2.IMachineImage,
        role: iam.IRole,
        security_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, id_)
        first, last = usable_range(subnet_cidr)  # the same range `validate` checks
        if not first <= spec.address <= last:
            cdk.Annotations.of(self).add_error(
                f"aws.head_node.address {spec.address} must be a usable address of the GPU subnet "
                f"{subnet_cidr} ({first}–{last}); pick one there"
            )
        self.instance = ec2.Instance(
            self,
            "Instance",
            instance_type=ec2.InstanceType(spec.instance_type),
            machine_image=image,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=[subnet]),
            private_ip_address=str(spec.address),
            security_group=security_group,
            role=role,
            detailed_monitoring=True,
            disable_api_termination=True,
            associate_public_ip_address=False,
            block_devices=[
                ec2.BlockDevice(
                    device_name=ROOT_DEVICE,
                    volume=ec2.BlockDeviceVolume.ebs(
                        ROOT_VOLUME_GIB, volume_type=ec2.EbsDeviceVolumeType.GP3, encrypted=True
                    ),
                )
            ],
        )
        # Our own (unnamed) launch template: the one Instance(require_imdsv2=True) makes has a fixed
        # name, which would collide between two clusters in one account and region.
        self.launch_template = ec2.LaunchTemplate(self, "Metadata", require_imdsv2=True)
        cfn = self.instance.node.default_child
        assert isinstance(cfn, ec2.CfnInstance)
        cfn.launch_template = ec2.CfnInstance.LaunchTemplateSpecificationProperty(
            launch_template_id=self.launch_template.launch_template_id,
            version=self.launch_template.latest_version_number,
        )
        acknowledge(
            self.instance,
            {
                "NIST.800.53.R5::NIST.800.53.R5-EC2InstancesInVPC": (
                    "The only interface is in the cluster's private subnet (NetworkInterfaces[0].SubnetId, "
                    "imported from the network stack); the rule reads the top-level SubnetId only."
                ),
            },
        )
