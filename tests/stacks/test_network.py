"""Network stack intent: private GPU subnet in the cluster's AZ, S3 endpoint, flow logs, NAT and VPN."""

from __future__ import annotations

from aws_cdk.assertions import Match

from tests.stacks.conftest import Synth


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
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_count_is("AWS::EC2::InternetGateway", 0)


def test_s3_gateway_endpoint_serves_the_gpu_subnet(example_synth: Synth) -> None:
    template = example_synth.template("Network")
    route_tables = template.find_resources("AWS::EC2::RouteTable")
    template.has_resource_properties(
        "AWS::EC2::VPCEndpoint",
        {
            "VpcEndpointType": "Gateway",
            "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]},
            "RouteTableIds": [{"Ref": rt} for rt in route_tables],
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
