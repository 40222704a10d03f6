"""One capacity group: cluster placement group, EFA security group, launch template, Auto Scaling group."""

from __future__ import annotations

from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.clusterfile.model.aws import CapacityGroup
from stacks.parts.acks import acknowledge
from stacks.parts.efa_security_group import EfaSecurityGroup
from stacks.parts.gpu_launch_template import GpuLaunchTemplate
from stacks.tags import GROUP_TAG

ASG_REASONS = {
    "AwsSolutions::AwsSolutions-EC26": (
        "cdk-nag cannot follow the ASG's launch-template reference and throws; the launch template's "
        "root volume is encrypted gp3 (asserted in tests/stacks/test_capacity.py)."
    ),
    "AwsSolutions::AwsSolutions-AS3": (
        "Failed launches and terminations reach the alerts topic through EventBridge (alerts stack); "
        "ordinary scaling is driven and logged by Slurm power saving."
    ),
    "NIST.800.53.R5::NIST.800.53.R5-EC2IMDSv2Enabled": (
        "IMDSv2 is required in the launch template (HttpTokens required), which the rule does not follow "
        "from the ASG; enforced by GpuCluster-Imdsv2."
    ),
}


class GpuGroup(Construct):
    """Instances of one capacity group, in one subnet (one AZ), launched by an Auto Scaling group.

    On-demand and spot use a mixed-instances policy over the primary and fallback types (spot with
    price-capacity-optimized); capacity blocks launch the reserved type from the launch template.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        group: CapacityGroup,
        asg_name: str,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        image: ec2.IMachineImage,
        role: iam.IRole,
        user_data: str,
        node_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, id_)
        self.spec = group
        self.placement_group: ec2.CfnPlacementGroup | None = None
        if group.uses_placement_group:
            self.placement_group = ec2.CfnPlacementGroup(self, "PlacementGroup", strategy="cluster")
        self.efa_security_group = EfaSecurityGroup(self, "Efa", vpc=vpc, group_name=group.name).security_group
        self.template = GpuLaunchTemplate(
            self,
            "Template",
            group=group,
            image=image,
            role=role,
            user_data=user_data,
            efa_group=self.efa_security_group,
            node_group=node_group,
        )
        launch_template, mixed_policy = self._launch_props()
        self.auto_scaling_group = autoscaling.CfnAutoScalingGroup(
            self,
            "Group",
            auto_scaling_group_name=asg_name,
            min_size=str(group.min_count),
            max_size=str(group.max_count),
            vpc_zone_identifier=[subnet.subnet_id],
            placement_group=self.placement_group.ref if self.placement_group else None,
            capacity_rebalance=True if group.market == "spot" else None,
            health_check_type="EC2",
            tags=[
                autoscaling.CfnAutoScalingGroup.TagPropertyProperty(
                    key="Name", value=asg_name, propagate_at_launch=True
                ),
                autoscaling.CfnAutoScalingGroup.TagPropertyProperty(
                    key=GROUP_TAG, value=group.name, propagate_at_launch=True
                ),
            ],
            launch_template=launch_template,
            mixed_instances_policy=mixed_policy,
        )
        acknowledge(self.auto_scaling_group, ASG_REASONS)
        acknowledge(
            self.efa_security_group,
            {
                "NIST.800.53.R5::NIST.800.53.R5-EC2RestrictedCommonPorts": (
                    "The only ingress source is this security group itself (EFA requires all traffic "
                    "between peers); no CIDR can reach any port. Checked by GpuCluster-EfaSelfReference."
                ),
            },
        )

    def _launch_props(
        self,
    ) -> tuple[
        autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty | None,
        autoscaling.CfnAutoScalingGroup.MixedInstancesPolicyProperty | None,
    ]:
        """Either a plain launch template (capacity blocks) or a mixed-instances policy."""
        lt = self.template.launch_template
        spec = autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
            launch_template_id=lt.launch_template_id, version=lt.latest_version_number
        )
        if self.spec.market == "capacity-block":
            return spec, None
        types = [self.spec.instance_type, *self.spec.fallback_instance_types]
        spot = self.spec.market == "spot"
        policy = autoscaling.CfnAutoScalingGroup.MixedInstancesPolicyProperty(
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateProperty(
                launch_template_specification=spec,
                overrides=[
                    autoscaling.CfnAutoScalingGroup.LaunchTemplateOverridesProperty(instance_type=t)
                    for t in types
                ],
            ),
            instances_distribution=autoscaling.CfnAutoScalingGroup.InstancesDistributionProperty(
                on_demand_base_capacity=0,
                on_demand_percentage_above_base_capacity=0 if spot else 100,
                on_demand_allocation_strategy="prioritized",
                spot_allocation_strategy="price-capacity-optimized" if spot else None,
            ),
        )
        return None, policy
