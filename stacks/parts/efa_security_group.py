"""The EFA security group: all traffic to and from itself, nothing else in or out."""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

# An inline egress entry that matches no packet. Without any inline egress CloudFormation keeps the
# default allow-all egress rule, because the self-referencing rules must be separate resources.
NO_TRAFFIC: Final = {
    "CidrIp": "255.255.255.255/32",
    "Description": "Disallow all traffic (removes the default allow-all egress)",
    "IpProtocol": "icmp",
    "FromPort": 252,
    "ToPort": 86,
}


class EfaSecurityGroup(Construct):
    """Self-referencing security group EFA requires (ingress and egress to the same group)."""

    def __init__(self, scope: Construct, id_: str, *, vpc: ec2.IVpc, group_name: str) -> None:
        super().__init__(scope, id_)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description=f"EFA traffic between {group_name} instances only",
            allow_all_outbound=False,
        )
        sg = self.security_group
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA and NCCL traffic from the same group")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "EFA and NCCL traffic to the same group")
        cfn = sg.node.default_child
        assert isinstance(cfn, ec2.CfnSecurityGroup)
        cfn.add_property_override("SecurityGroupEgress", [NO_TRAFFIC])
