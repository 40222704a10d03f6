"""One capacity group: cluster placement group, EFA security group and launch template.

No Auto Scaling group: the controller's power programs launch a group's instances with instant EC2 Fleet
from its launch template when Slurm resumes nodes, and terminate them when Slurm suspends them, so no
scale-in or capacity rebalancing can take an instance that runs a job.
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster.clusterfile.model.aws import CapacityGroup
from stacks.parts.acks import acknowledge
from stacks.parts.efa_security_group import EfaSecurityGroup
from stacks.parts.gpu_launch_template import GpuLaunchTemplate


class GpuGroup(Construct):
    """What instances of one capacity group launch from, in one subnet (one AZ)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        group: CapacityGroup,
        vpc: ec2.IVpc,
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
            placement_group=self.placement_group.ref if self.placement_group else None,
        )
        acknowledge(
            self.efa_security_group,
            {
                "NIST.800.53.R5::NIST.800.53.R5-EC2RestrictedCommonPorts": (
                    "The only ingress source is this security group itself (EFA requires all traffic "
                    "between peers); no CIDR can reach any port. Checked by GpuCluster-EfaSelfReference."
                ),
            },
        )
