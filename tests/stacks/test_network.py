"""Network stack intent: private GPU subnet in the cluster's AZ, S3 endpoint, flow logs, NAT and VPN."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match, Template

from tests.stacks.conftest import Synth, synthesize, variant


def _subnet_route_table(template: Template, subnet_name: str) -> str:
    """The logical id of the route table of the subnet group subnet_name (one AZ: one subnet)."""
    subnets = {
        logical_id
        for logical_id, subnet in template.find_resources("AWS::EC2::Subnet").items()
        if {"Key": "aws-cdk:subnet-name", "Value": subnet_name} in subnet["Properties"]["Tags"]
    }
    (association,) = [
        a["Properties"]["RouteTableId"]["Ref"]
        for a in template.find_resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"] in subnets
    ]
    table: str = association
    return table


def _default_routes(template: Template, route_table: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in template.find_resources("AWS::EC2::Route").values()
        if r["Properties"]["RouteTableId"] == {"Ref": route_table}
        and r["Properties"].get("DestinationCidrBlock") == "0.0.0.0/0"
    ]


def test_gpu_subnet_is_private_in_the_cluster_az(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None
    template = example_synth.template("Network")
    template.has_resource_properties(
        "AWS::EC2::VPC",
        {"CidrBlock": str(aws.vpc_cidr), "EnableDnsHostnames": True, "EnableDnsSupport": True},
    )
    subnets = template.find_resources("AWS::EC2::Subnet")
    assert subnets, "no subnet"
    for subnet in subnets.values():
        assert subnet["Properties"]["AvailabilityZone"] == aws.availability_zone
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False
    # aws.egress is false: the GPU subnet has no route out of the VPC.
    assert _default_routes(template, _subnet_route_table(template, "gpu")) == []


def test_without_egress_only_the_image_build_subnet_routes_out_through_a_nat(example_synth: Synth) -> None:
    template = example_synth.template("Network")
    template.resource_count_is("AWS::EC2::NatGateway", 1)
    (route,) = _default_routes(template, _subnet_route_table(template, "image-build"))
    assert "NatGatewayId" in route
    image = example_synth.template("Image")
    (infrastructure,) = image.find_resources("AWS::ImageBuilder::InfrastructureConfiguration").values()
    assert "imagebuild" in str(infrastructure["Properties"]["SubnetId"]).lower()


def test_a_cluster_with_its_own_ami_and_no_egress_has_no_nat(tmp_path: Path) -> None:
    cluster = variant(lambda d: d["aws"].update(ami_id="ami-0123456789abcdef0"))
    template = synthesize(cluster, tmp_path, source="variant.yaml").template("Network")
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_count_is("AWS::EC2::InternetGateway", 0)


def test_s3_gateway_endpoint_serves_the_gpu_subnet(example_synth: Synth) -> None:
    template = example_synth.template("Network")
    template.has_resource_properties(
        "AWS::EC2::VPCEndpoint",
        {
            "VpcEndpointType": "Gateway",
            "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]},
            "RouteTableIds": [{"Ref": _subnet_route_table(template, "gpu")}],
        },
    )


def test_ssm_endpoint_only_accepts_https_from_the_vpc(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None
    template = example_synth.template("Network")
    template.has_resource_properties(
        "AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Interface", "PrivateDnsEnabled": True}
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroup",
        {
            "GroupDescription": "SSM endpoint",
            "SecurityGroupIngress": [
                {
                    "CidrIp": str(aws.vpc_cidr),
                    "FromPort": 443,
                    "ToPort": 443,
                    "IpProtocol": "tcp",
                    "Description": Match.any_value(),
                }
            ],
        },
    )


def test_flow_logs_capture_all_traffic_to_an_encrypted_log_group(example_synth: Synth) -> None:
    template = example_synth.template("Network")
    template.has_resource_properties(
        "AWS::EC2::FlowLog",
        {"ResourceType": "VPC", "TrafficType": "ALL", "LogDestinationType": "cloud-watch-logs"},
    )
    template.has_resource(
        "AWS::Logs::LogGroup",
        {
            "Properties": {"RetentionInDays": 365, "KmsKeyId": {"Fn::GetAtt": [Match.any_value(), "Arn"]}},
            "DeletionPolicy": "Retain",
        },
    )


def test_egress_adds_one_nat_gateway_and_no_public_addresses(networked_synth: Synth) -> None:
    template = networked_synth.template("Network")
    template.resource_count_is("AWS::EC2::NatGateway", 1)
    for subnet in template.find_resources("AWS::EC2::Subnet").values():
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False
    # With egress, SSM is reached through the NAT: no interface endpoint is created.
    assert not template.find_resources(
        "AWS::EC2::VPCEndpoint", {"Properties": {"VpcEndpointType": "Interface"}}
    )


def test_vpn_connects_the_file_gateway_with_bgp_and_propagates_routes(networked_synth: Synth) -> None:
    template = networked_synth.template("Network")
    template.has_resource_properties(
        "AWS::EC2::CustomerGateway", {"IpAddress": "203.0.113.10", "BgpAsn": 65010}
    )
    template.has_resource_properties("AWS::EC2::VPNConnection", {"Type": "ipsec.1"})
    template.has_resource_properties(
        "AWS::EC2::VPNGatewayRoutePropagation", {"RouteTableIds": Match.any_value()}
    )


def test_a_transit_gateway_carries_the_onprem_networks(tmp_path: Path) -> None:
    def with_transit_gateway(doc: dict[str, Any]) -> None:
        del doc["aws"]["vpn"]
        doc["aws"]["transit_gateway_id"] = "tgw-0123456789abcdef0"
        doc["aws"]["onprem_cidrs"] = ["10.10.0.0/16", "10.20.0.0/16"]

    template = synthesize(variant(with_transit_gateway), tmp_path, source="variant.yaml").template("Network")
    gpu_routes = _subnet_route_table(template, "gpu")
    (attachment_id,) = template.find_resources("AWS::EC2::TransitGatewayAttachment")
    routes = [
        r
        for r in template.find_resources("AWS::EC2::Route").values()
        if r["Properties"].get("TransitGatewayId")
    ]
    assert sorted(r["Properties"]["DestinationCidrBlock"] for r in routes) == ["10.10.0.0/16", "10.20.0.0/16"]
    for route in routes:
        assert route["Properties"]["RouteTableId"] == {"Ref": gpu_routes}
        assert route["DependsOn"] == [attachment_id]
    template.resource_count_is("AWS::EC2::VPNConnection", 0)
