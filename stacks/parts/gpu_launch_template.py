"""The GPU launch template: IMDSv2, encrypted gp3 root, one EFA interface per network card, market options."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.efa_layout import interfaces_for
from gpucluster.clusterfile.model.aws import CapacityGroup, EfaInterface

ROOT_DEVICE = "/dev/sda1"  # root device of Ubuntu AMIs: Canonical's and the node image built on them
# Real instance types missing from cfn-lint 1.58's per-region list (built from the price list, where
# capacity-block-only types do not appear); our catalog already validates them, so E3628 is skipped
# on launch templates of these types only.
CFN_LINT_UNLISTED_TYPES = frozenset({"p5e.48xlarge"})


def network_interfaces(
    interfaces: list[EfaInterface], *, efa_group: ec2.ISecurityGroup, node_group: ec2.ISecurityGroup
) -> list[dict[str, Any]]:
    """CloudFormation NetworkInterfaces: the primary carries the node group, every one the EFA group."""
    out: list[dict[str, Any]] = []
    for iface in interfaces:
        primary = (iface.network_card, iface.device_index) == (0, 0)
        groups = [efa_group.security_group_id] + ([node_group.security_group_id] if primary else [])
        entry: dict[str, Any] = {
            "NetworkCardIndex": iface.network_card,
            "DeviceIndex": iface.device_index,
            "InterfaceType": iface.type,
            "Groups": groups,
            "DeleteOnTermination": True,
        }
        if primary:
            entry["AssociatePublicIpAddress"] = False
        out.append(entry)
    return out


class GpuLaunchTemplate(Construct):
    """Launch template of one capacity group, laid out for its instance type's network cards."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        group: CapacityGroup,
        image: ec2.IMachineImage,
        role: iam.IRole,
        user_data: str,
        efa_group: ec2.ISecurityGroup,
        node_group: ec2.ISecurityGroup,
        placement_group: str | None = None,
    ) -> None:
        super().__init__(scope, id_)
        self.interfaces = interfaces_for(group, INSTANCE_TYPES[group.instance_type])
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=ec2.InstanceType(group.instance_type),
            machine_image=image,
            user_data=ec2.UserData.custom(user_data),
            role=role,
            require_imdsv2=True,
            # One hop: containers on the node cannot reach the metadata service. Tags in the metadata
            # service: the node reads its Slurm name from its own tag at boot.
            # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/work-with-tags-in-IMDS.html
            http_put_response_hop_limit=1,
            instance_metadata_tags=True,
            block_devices=[
                ec2.BlockDevice(
                    device_name=ROOT_DEVICE,
                    volume=ec2.BlockDeviceVolume.ebs(
                        group.root_volume_gib,
                        volume_type=ec2.EbsDeviceVolumeType.GP3,
                        encrypted=True,
                        delete_on_termination=True,
                    ),
                )
            ],
        )
        cfn = self.launch_template.node.default_child
        assert isinstance(cfn, ec2.CfnLaunchTemplate)
        cfn.add_property_override(
            "LaunchTemplateData.NetworkInterfaces",
            network_interfaces(self.interfaces, efa_group=efa_group, node_group=node_group),
        )
        for path, value in market_options(group).items():
            cfn.add_property_override(f"LaunchTemplateData.{path}", value)
        if placement_group is not None:
            cfn.add_property_override("LaunchTemplateData.Placement.GroupName", placement_group)
        if group.instance_type in CFN_LINT_UNLISTED_TYPES:
            cfn.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E3628"]}})


def market_options(group: CapacityGroup) -> dict[str, Any]:
    """Launch-template market settings: capacity blocks and reservations live here; spot is the fleet's."""
    options: dict[str, Any] = {}
    if group.market == "capacity-block":
        options["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    if group.capacity_reservation_id is not None:
        options["CapacityReservationSpecification"] = {
            "CapacityReservationTarget": {"CapacityReservationId": group.capacity_reservation_id}
        }
    return options
