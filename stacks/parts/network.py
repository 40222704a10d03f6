"""The cluster VPC: private GPU subnet in one AZ, S3 gateway endpoint, flow logs, optional egress and VPN."""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import IPv4Network

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from gpucluster.clusterfile.model.aws import Vpn
from gpucluster.clusterfile.vpc_layout import (
    IMAGE_BUILD_SUBNET,
    NAT_SUBNET,
    SMALL_SUBNET_PREFIX,
    gpu_subnet,
    small_subnets,
    vpc_problems,
)
from stacks.parts.acks import acknowledge
from stacks.parts.encryption_key import EncryptionKey

FLOW_LOG_RETENTION = logs.RetentionDays.ONE_YEAR
GPU_SUBNET = "gpu"


class ClusterNetwork(Construct):
    """A VPC whose GPU subnet is private, in the cluster's AZ; checkpoint traffic stays off any NAT.

    The GPU subnet takes the lower half of the VPC CIDR so fixed addresses (a cloud head node) are
    predictable; with egress a small public subnet holds the NAT gateway only. Without egress, a node
    image build gets its own small private subnet routed to that NAT, so the GPU subnet stays closed
    while the build instance reaches the Ubuntu, NVIDIA and EFA package sources.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cidr: IPv4Network,
        availability_zone: str,
        egress: bool,
        vpn: Vpn | None,
        image_build: bool = False,
        transit_gateway_id: str | None = None,
        onprem_cidrs: Sequence[IPv4Network] = (),
    ) -> None:
        super().__init__(scope, id_)
        # `validate` runs the same check; this guard keeps the construct honest when used on its own.
        problems = vpc_problems(cidr, egress=egress, image_build=image_build)
        if problems:
            raise ValueError(f"aws.vpc_cidr: {'; '.join(problems)}")
        # The first half of the VPC, as allocated below: where fixed addresses must lie.
        self.gpu_cidr = gpu_subnet(cidr)
        private_type = ec2.SubnetType.PRIVATE_WITH_EGRESS if egress else ec2.SubnetType.PRIVATE_ISOLATED
        subnets = [
            ec2.SubnetConfiguration(name=GPU_SUBNET, subnet_type=private_type, cidr_mask=cidr.prefixlen + 1)
        ]
        small = small_subnets(egress=egress, image_build=image_build)
        build_subnet_needed = IMAGE_BUILD_SUBNET in small
        if NAT_SUBNET in small:
            subnets.append(
                ec2.SubnetConfiguration(
                    name=NAT_SUBNET,
                    subnet_type=ec2.SubnetType.PUBLIC,
                    cidr_mask=SMALL_SUBNET_PREFIX,
                    map_public_ip_on_launch=False,
                )
            )
        if build_subnet_needed:
            subnets.append(
                ec2.SubnetConfiguration(
                    name=IMAGE_BUILD_SUBNET,
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=SMALL_SUBNET_PREFIX,
                )
            )
        vpn_connections = None
        if vpn is not None:
            # BGP (dynamic routing): on-prem prefixes propagate into the GPU subnet's route table.
            vpn_connections = {
                "Onprem": ec2.VpnConnectionOptions(
                    ip=str(vpn.customer_gateway_address),
                    asn=vpn.bgp_asn,
                )
            }
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(str(cidr)),
            availability_zones=[availability_zone],
            nat_gateways=1 if egress or build_subnet_needed else 0,
            subnet_configuration=subnets,
            vpn_gateway=vpn is not None,
            vpn_connections=vpn_connections,
            vpn_route_propagation=[ec2.SubnetSelection(subnet_group_name=GPU_SUBNET)] if vpn else None,
        )
        for public in self.vpc.public_subnets:
            acknowledge(
                public,
                {
                    "NIST.800.53.R5::NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW": (
                        "Egress for aws.egress: true or for the node image build. This subnet holds only "
                        "the NAT gateway (no instances, no public IPs mapped); private subnets route "
                        "0.0.0.0/0 to the NAT only."
                    ),
                },
            )
        self.gpu_subnet = self.vpc.select_subnets(subnet_group_name=GPU_SUBNET).subnets[0]
        # Where the image build instance runs: a subnet with a route out, never an isolated one.
        self.image_build_subnet = (
            self.vpc.select_subnets(subnet_group_name=IMAGE_BUILD_SUBNET).subnets[0]
            if build_subnet_needed
            else self.gpu_subnet
        )
        self.s3_endpoint = self.vpc.add_gateway_endpoint(
            "S3",
            service=ec2.GatewayVpcEndpointAwsService.S3,
            subnets=[ec2.SubnetSelection(subnets=[self.gpu_subnet])],
        )
        self._add_ssm_endpoint(egress=egress, cidr=cidr)
        self._add_flow_logs()
        if transit_gateway_id is not None:
            self._attach_transit_gateway(transit_gateway_id, onprem_cidrs)

    def _attach_transit_gateway(self, transit_gateway_id: str, onprem_cidrs: Sequence[IPv4Network]) -> None:
        """Attach the GPU subnet to the site's transit gateway and route the on-prem networks to it."""
        attachment = ec2.CfnTransitGatewayAttachment(
            self,
            "TransitGatewayAttachment",
            transit_gateway_id=transit_gateway_id,
            vpc_id=self.vpc.vpc_id,
            subnet_ids=[self.gpu_subnet.subnet_id],
        )
        for index, onprem in enumerate(onprem_cidrs):
            route = ec2.CfnRoute(
                self,
                f"OnpremRoute{index}",
                route_table_id=self.gpu_subnet.route_table.route_table_id,
                destination_cidr_block=str(onprem),
                transit_gateway_id=transit_gateway_id,
            )
            route.add_dependency(attachment)

    def _add_ssm_endpoint(self, *, egress: bool, cidr: IPv4Network) -> None:
        """SSM endpoint: nodes read the munge key from Parameter Store without leaving the VPC."""
        self.ssm_endpoint: ec2.InterfaceVpcEndpoint | None = None
        if egress:
            return
        sg = ec2.SecurityGroup(
            self,
            "SsmEndpointSecurityGroup",
            vpc=self.vpc,
            description="SSM endpoint",
            allow_all_outbound=False,
        )
        sg.add_ingress_rule(ec2.Peer.ipv4(str(cidr)), ec2.Port.tcp(443), "HTTPS from the cluster VPC")
        self.ssm_endpoint = self.vpc.add_interface_endpoint(
            "Ssm",
            service=ec2.InterfaceVpcEndpointAwsService.SSM,
            subnets=ec2.SubnetSelection(subnets=[self.gpu_subnet]),
            private_dns_enabled=True,
            security_groups=[sg],
            open=False,
        )

    def _add_flow_logs(self) -> None:
        """All traffic of the VPC to an encrypted CloudWatch log group kept for a year."""
        key = EncryptionKey(self, "FlowLogKey", alias=None, description="VPC flow logs")
        key.key.grant_encrypt_decrypt(iam.ServicePrincipal(f"logs.{cdk.Aws.REGION}.amazonaws.com"))
        self.flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=FLOW_LOG_RETENTION,
            encryption_key=key.key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.flow_log = self.vpc.add_flow_log(
            "All",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        acknowledge(
            self.flow_log,
            {
                "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy": (
                    "CDK's flow-log delivery role; its inline policy is scoped to this one log group."
                ),
            },
        )
