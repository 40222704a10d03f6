"""Capacity stack intent: placement, EFA interfaces per card, security groups, IMDSv2, markets, IAM."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.names import image_ami_parameter
from gpucluster.render import render
from tests.stacks.conftest import Synth

SHIPPED_WITH_CAPACITY = ["example", "cloud-only"]


def _resources(synth: Synth, type_: str) -> dict[str, Any]:
    found: dict[str, Any] = synth.template("Capacity").find_resources(type_)
    return found


def _group_parts(synth: Synth, group: CapacityGroup) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ASG resource, launch template resource) of one capacity group."""
    asgs = _resources(synth, "AWS::AutoScaling::AutoScalingGroup")
    (asg,) = [a for a in asgs.values() if a["Properties"]["AutoScalingGroupName"].endswith(f"-{group.name}")]
    props = asg["Properties"]
    spec = (
        props.get("LaunchTemplate")
        or props["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    )
    lt = _resources(synth, "AWS::EC2::LaunchTemplate")[spec["LaunchTemplateId"]["Ref"]]
    return asg, lt


def _groups(synth: Synth) -> list[CapacityGroup]:
    assert synth.cluster.aws is not None
    return list(synth.cluster.aws.capacity)


@pytest.fixture(params=SHIPPED_WITH_CAPACITY)
def synth(request: pytest.FixtureRequest, synth_file: Any) -> Synth:
    result: Synth = synth_file(request.param)
    return result


def test_every_network_card_has_exactly_one_efa_interface(synth: Synth) -> None:
    for group in _groups(synth):
        _, lt = _group_parts(synth, group)
        cards = INSTANCE_TYPES[group.instance_type].network_cards
        interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
        efa = [i for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")]
        assert sorted(i["NetworkCardIndex"] for i in efa) == list(range(cards)), group.name
        for iface in efa:
            expected_device = 0 if iface["NetworkCardIndex"] == 0 and group.efa_layout == "efa" else 1
            assert iface["DeviceIndex"] == expected_device, (group.name, iface)
        primary = [i for i in interfaces if (i["NetworkCardIndex"], i["DeviceIndex"]) == (0, 0)]
        assert len(primary) == 1
        assert primary[0]["InterfaceType"] == ("efa" if group.efa_layout == "efa" else "interface")
        assert primary[0]["AssociatePublicIpAddress"] is False


def test_layouts_follow_the_file_choice(cloud_only_synth: Synth) -> None:
    types = {}
    for group in _groups(cloud_only_synth):
        _, lt = _group_parts(cloud_only_synth, group)
        types[group.efa_layout] = {
            i["InterfaceType"] for i in lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
        }
    assert types == {"efa-only": {"interface", "efa-only"}, "efa": {"efa"}}


def test_efa_security_group_allows_itself_in_and_out_and_nothing_else_inbound(synth: Synth) -> None:
    template = synth.template("Capacity")
    for group in _groups(synth):
        _, lt = _group_parts(synth, group)
        interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
        common = set.intersection(*({g["Fn::GetAtt"][0] for g in i["Groups"]} for i in interfaces))
        (efa_sg,) = common
        ref = {"Fn::GetAtt": [efa_sg, "GroupId"]}
        template.has_resource_properties(
            "AWS::EC2::SecurityGroupIngress",
            {"GroupId": ref, "SourceSecurityGroupId": ref, "IpProtocol": "-1"},
        )
        template.has_resource_properties(
            "AWS::EC2::SecurityGroupEgress",
            {"GroupId": ref, "DestinationSecurityGroupId": ref, "IpProtocol": "-1"},
        )
        ingress = template.find_resources("AWS::EC2::SecurityGroupIngress", {"Properties": {"GroupId": ref}})
        assert len(ingress) == 1
        sg_props = _resources(synth, "AWS::EC2::SecurityGroup")[efa_sg]["Properties"]
        assert "SecurityGroupIngress" not in sg_props
        # allow_all_outbound=False renders a placeholder egress that matches no traffic.
        (placeholder,) = sg_props["SecurityGroupEgress"]
        assert placeholder["CidrIp"] == "255.255.255.255/32"


def test_placement_group_is_cluster_except_for_capacity_blocks(synth: Synth) -> None:
    groups = _resources(synth, "AWS::EC2::PlacementGroup")
    for group in _groups(synth):
        asg, lt = _group_parts(synth, group)
        if group.market == "capacity-block":
            assert "PlacementGroup" not in asg["Properties"]
            assert "Placement" not in lt["Properties"]["LaunchTemplateData"]
        else:
            pg = asg["Properties"]["PlacementGroup"]["Ref"]
            assert groups[pg]["Properties"]["Strategy"] == "cluster"
        assert len(asg["Properties"]["VPCZoneIdentifier"]) == 1


def test_imdsv2_encrypted_gp3_root_and_instance_profile(synth: Synth) -> None:
    for group in _groups(synth):
        _, lt = _group_parts(synth, group)
        data = lt["Properties"]["LaunchTemplateData"]
        assert data["MetadataOptions"] == {
            "HttpTokens": "required",
            "HttpPutResponseHopLimit": 1,  # containers on the node cannot reach the metadata service
            "InstanceMetadataTags": "enabled",  # the node reads its Slurm name from its tag
        }
        (root,) = data["BlockDeviceMappings"]
        assert root["Ebs"] == {
            "DeleteOnTermination": True,
            "Encrypted": True,
            "VolumeSize": group.root_volume_gib,
            "VolumeType": "gp3",
        }
        assert "Arn" in data["IamInstanceProfile"]["Arn"]["Fn::GetAtt"]
        assert "SecurityGroupIds" not in data and "SecurityGroups" not in data
        assert data["ImageId"]["Ref"] in synth.templates["Capacity"]["Parameters"]


def test_ami_is_an_ssm_parameter_resolved_at_deploy_time(synth: Synth) -> None:
    assert synth.cluster.aws is not None
    params = synth.templates["Capacity"]["Parameters"]
    ami = [p for p in params.values() if p["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"]
    assert [p["Default"] for p in ami] == [image_ami_parameter(synth.cluster.name)]


def test_user_data_is_the_rendered_cloud_init(synth: Synth) -> None:
    for group in _groups(synth):
        _, lt = _group_parts(synth, group)
        user_data = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
        source = {"example": "clusters/example.yaml", "cloudonly": "clusters/cloud-only.yaml"}[
            synth.cluster.name
        ]
        assert (
            user_data == render(synth.cluster, "aws", group=group.name, source=source)["cloud-init/user-data"]
        )


def test_markets(synth: Synth) -> None:
    for group in _groups(synth):
        asg, lt = _group_parts(synth, group)
        props, data = asg["Properties"], lt["Properties"]["LaunchTemplateData"]
        assert (props["MinSize"], props["MaxSize"]) == (str(group.min_count), str(group.max_count))
        if group.market == "capacity-block":
            assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
            assert data["CapacityReservationSpecification"] == {
                "CapacityReservationTarget": {"CapacityReservationId": group.capacity_reservation_id}
            }
            assert "MixedInstancesPolicy" not in props
            continue
        assert "InstanceMarketOptions" not in data
        policy = props["MixedInstancesPolicy"]
        overrides = [o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]]
        assert overrides == [group.instance_type, *group.fallback_instance_types]
        dist = policy["InstancesDistribution"]
        if group.market == "spot":
            assert dist["OnDemandPercentageAboveBaseCapacity"] == 0
            assert dist["SpotAllocationStrategy"] == "price-capacity-optimized"
            assert props["CapacityRebalance"] is True
        else:
            assert dist["OnDemandPercentageAboveBaseCapacity"] == 100
            assert "SpotAllocationStrategy" not in dist


def test_node_role_reads_and_writes_only_under_the_checkpoint_prefix(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None and aws.checkpoint is not None
    prefix = aws.checkpoint.prefix
    (policy,) = _resources(example_synth, "AWS::IAM::ManagedPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    s3_statements = [s for s in statements if any(a.startswith("s3:") for a in _list(s["Action"]))]
    for statement in s3_statements:
        assert statement["Effect"] == "Allow"
        actions = _list(statement["Action"])
        assert not any("*" in a for a in actions)
        if actions == ["s3:ListBucket"]:
            assert statement["Condition"] == {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}
        else:
            join = statement["Resource"]["Fn::Join"][1]
            assert join[-1] == f"/{prefix}/*"
            assert "s3:DeleteObjectVersion" not in actions
    kms = [s for s in statements if _list(s["Action"])[0].startswith("kms:")]
    assert kms and kms[0]["Condition"]["StringEquals"]["kms:ViaService"]
    assert all(s["Resource"] != "*" for s in statements)


def _list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def test_head_node_fixed_address_private_and_protected(cloud_only_synth: Synth) -> None:
    aws = cloud_only_synth.cluster.aws
    assert aws is not None and aws.head_node is not None
    cloud_only_synth.template("Capacity").has_resource_properties(
        "AWS::EC2::Instance",
        {
            "InstanceType": aws.head_node.instance_type,
            "DisableApiTermination": True,
            "NetworkInterfaces": [
                Match.object_like(
                    {"PrivateIpAddress": str(aws.head_node.address), "AssociatePublicIpAddress": False}
                )
            ],
            "LaunchTemplate": {"LaunchTemplateId": {"Ref": Match.any_value()}, "Version": Match.any_value()},
        },
    )


def test_no_security_group_keeps_the_default_allow_all_egress(synth: Synth) -> None:
    for logical_id, sg in _resources(synth, "AWS::EC2::SecurityGroup").items():
        assert sg["Properties"].get("SecurityGroupEgress"), logical_id


def test_node_security_group_admits_only_cluster_networks(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None
    allowed = {str(aws.vpc_cidr), *(str(c) for c in aws.onprem_cidrs)}
    for sg in _resources(example_synth, "AWS::EC2::SecurityGroup").values():
        for rule in sg["Properties"].get("SecurityGroupIngress", []):
            assert rule["CidrIp"] in allowed, rule


def test_on_demand_reservation_targets_the_reservation_without_a_market_type() -> None:
    from stacks.parts.gpu_launch_template import market_options

    group = CapacityGroup(
        name="od-cr", instance_type="p5.48xlarge", max_count=2, capacity_reservation_id="cr-0123456789abcdef0"
    )
    assert market_options(group) == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
        }
    }
    assert market_options(group.model_copy(update={"capacity_reservation_id": None})) == {}


def test_head_node_outside_the_gpu_subnet_is_rejected() -> None:
    from ipaddress import IPv4Network

    from gpucluster.clusterfile import ClusterFileError
    from tests.stacks.conftest import variant

    def upper_half(doc: dict[str, Any]) -> None:
        vpc = IPv4Network(doc["aws"]["vpc_cidr"])
        # Inside the VPC, outside the GPU subnet (its lower half).
        upper = list(vpc.subnets(prefixlen_diff=1))[1]
        doc["aws"]["head_node"]["address"] = str(upper.network_address + 10)

    with pytest.raises(
        ClusterFileError, match=r"aws\.head_node\.address: .* not a usable address of the GPU subnet"
    ):
        variant(upper_half, base="cloud-only")


def _resolve(value: Any, refs: dict[str, str]) -> str:
    """A parameter value as CloudFormation would write it, with each Ref replaced by refs[logical id]."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_resolve(part, refs) for part in parts)
    if "Ref" in value:
        return refs[value["Ref"]]
    if "Fn::ImportValue" in value:
        return "subnet-0imported"
    raise AssertionError(f"unexpected intrinsic {value}")


def test_the_capacity_parameter_is_what_the_power_programs_read(example_synth: Synth) -> None:
    import boto3
    from moto import mock_aws

    from gpucluster.power import capacity, config

    template = example_synth.template("Capacity")
    (parameter,) = template.find_resources("AWS::SSM::Parameter").values()
    launch_templates = template.find_resources("AWS::EC2::LaunchTemplate")
    placement_groups = template.find_resources("AWS::EC2::PlacementGroup")
    refs = {logical_id: f"<{logical_id}>" for logical_id in [*launch_templates, *placement_groups]}
    value = _resolve(parameter["Properties"]["Value"], refs)
    cfg = config.from_cluster(example_synth.cluster)
    assert parameter["Properties"]["Name"] == cfg.capacity_parameter
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name=cfg.capacity_parameter, Type="String", Value=value)
        deployed = capacity.read(ssm, cfg.capacity_parameter)
    assert sorted(deployed) == sorted(group.name for group in cfg.groups)
    for group in deployed.values():
        assert group.launch_template_id.strip("<>") in launch_templates
        assert group.subnet_ids == ("subnet-0imported",)
        assert group.placement_group is not None and group.placement_group.strip("<>") in placement_groups
