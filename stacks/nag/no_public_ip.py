"""GpuCluster-NoPublicIp: no instance interface or subnet hands out a public IPv4 address."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.launch_templates import interfaces
from stacks.nag.template import Finding, Rule, Template


def check(template: Template) -> Iterator[Finding]:
    """Launch-template and instance interfaces never associate public IPs; subnets never map them."""
    for lt_id, props in template.of_type("AWS::EC2::LaunchTemplate"):
        for iface in interfaces(props):
            if iface.get("AssociatePublicIpAddress") in (True, "true"):
                yield lt_id, f"network card {iface.get('NetworkCardIndex', 0)} associates a public IP"
    for instance_id, props in template.of_type("AWS::EC2::Instance"):
        for iface in props.get("NetworkInterfaces", []):
            if iface.get("AssociatePublicIpAddress") in (True, "true"):
                yield instance_id, "instance interface associates a public IP"
    for subnet_id, props in template.of_type("AWS::EC2::Subnet"):
        if props.get("MapPublicIpOnLaunch") in (True, "true"):
            yield subnet_id, "subnet maps public IPs on launch"


RULE = Rule(
    id="GpuCluster-NoPublicIp",
    description="Cluster instances have no public address; they are reached over the VPC or VPN only.",
    fix="Set AssociatePublicIpAddress false and MapPublicIpOnLaunch false.",
    check=check,
)
