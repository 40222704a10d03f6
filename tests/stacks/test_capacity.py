"""Capacity stack intent: placement, EFA interfaces per card, security groups, IMDSv2, markets, IAM."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.names import image_ami_parameter, munge_key_alias
from gpucluster.render import render
from stacks.nag.launch_templates import capacity_groups
from stacks.nag.template import Template
from tests.stacks.conftest import Synth

SHIPPED_WITH_CAPACITY = ["example", "cloud-only"]


def _resources(synth: Synth, type_: str) -> dict[str, Any]:
    found: dict[str, Any] = synth.template("Capacity").find_resources(type_)
    return found


def _group_parts(synth: Synth, group: CapacityGroup) -> tuple[dict[str, Any], dict[str, Any]]:
    """(capacity parameter record, launch template resource) of one capacity group."""
    record = capacity_groups(Template(synth.templates["Capacity"]))[group.name]
    lt = _resources(synth, "AWS::EC2::LaunchTemplate")[record["launch_template_id"]]
    return record, lt


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
        record, lt = _group_parts(synth, group)
        if group.market == "capacity-block":
            assert record.get("placement_group") is None
            assert "Placement" not in lt["Properties"]["LaunchTemplateData"]
        else:
            pg = lt["Properties"]["LaunchTemplateData"]["Placement"]["GroupName"]["Ref"]
            assert groups[pg]["Properties"]["Strategy"] == "cluster"
            assert record["placement_group"] == pg
        assert len(record["subnet_ids"]) == 1


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


def test_markets_and_sizes_are_what_the_power_programs_launch(synth: Synth) -> None:
    assert not _resources(synth, "AWS::AutoScaling::AutoScalingGroup")  # nothing scales in under a job
    for group in _groups(synth):
        record, lt = _group_parts(synth, group)
        data = lt["Properties"]["LaunchTemplateData"]
        assert record["market"] == group.market
        assert record["instance_types"] == [group.instance_type, *group.fallback_instance_types]
        assert (record["min_count"], record["max_count"]) == (group.min_count, group.max_count)
        assert record.get("capacity_reservation_id") == group.capacity_reservation_id
        if group.market == "capacity-block":
            assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
            assert data["CapacityReservationSpecification"] == {
                "CapacityReservationTarget": {"CapacityReservationId": group.capacity_reservation_id}
            }
        else:
            # Spot or on-demand is the fleet request's choice (gpucluster.power.fleet), not the template's.
            assert "InstanceMarketOptions" not in data


def test_checkpoint_writes_go_through_a_role_bounded_to_the_prefix_that_only_nodes_assume(
    example_synth: Synth,
) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None and aws.checkpoint is not None
    prefix = aws.checkpoint.prefix
    policies = _resources(example_synth, "AWS::IAM::ManagedPolicy")
    (writer,) = [p for i, p in policies.items() if i.startswith("CheckpointWriterPolicy")]
    statements = writer["Properties"]["PolicyDocument"]["Statement"]
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions = _list(statement["Action"])
        assert not any("*" in a for a in actions)
        if actions == ["s3:ListBucket"]:
            assert statement["Condition"] == {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}
        elif actions[0].startswith("s3:"):
            join = statement["Resource"]["Fn::Join"][1]
            assert join[-1] == f"/{prefix}/*"
            assert "s3:DeleteObjectVersion" not in actions  # versions survive a job's mistakes
        else:
            assert statement["Condition"]["StringEquals"]["kms:ViaService"]
    roles = _resources(example_synth, "AWS::IAM::Role")
    (writer_role,) = [r for i, r in roles.items() if i.startswith("CheckpointWriterRole")]
    (trust,) = writer_role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"]["AWS"]["Fn::GetAtt"][0].startswith("NodesRole")
    assert writer_role["Properties"]["MaxSessionDuration"] == 3600
    # The instance role itself holds no S3 access: only root reaches it, and root writes no checkpoints.
    (node,) = [p for i, p in policies.items() if i.startswith("NodesPolicy")]
    node_actions = {a for s in node["Properties"]["PolicyDocument"]["Statement"] for a in _list(s["Action"])}
    assert node_actions == {"ssm:GetParameter", "kms:Decrypt", "sts:AssumeRole"}


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
    cfg = config.from_cluster(example_synth.cluster)
    (parameter,) = template.find_resources(
        "AWS::SSM::Parameter", {"Properties": {"Name": cfg.capacity_parameter}}
    ).values()
    launch_templates = template.find_resources("AWS::EC2::LaunchTemplate")
    placement_groups = template.find_resources("AWS::EC2::PlacementGroup")
    refs = {logical_id: f"<{logical_id}>" for logical_id in [*launch_templates, *placement_groups]}
    value = _resolve(parameter["Properties"]["Value"], refs)
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name=cfg.capacity_parameter, Type="String", Value=value)
        deployed = capacity.read(ssm, cfg.capacity_parameter)
    assert sorted(deployed) == sorted(group.name for group in cfg.groups)
    for group in deployed.values():
        assert group.launch_template_id.strip("<>") in launch_templates
        assert group.subnet_ids == ("subnet-0imported",)
        assert group.placement_group is not None and group.placement_group.strip("<>") in placement_groups


def _controller_statements(synth: Synth) -> list[dict[str, Any]]:
    (policy,) = [
        p for i, p in _resources(synth, "AWS::IAM::ManagedPolicy").items() if i.startswith("ControllerPolicy")
    ]
    statements: list[dict[str, Any]] = policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_the_controller_may_launch_tag_and_terminate_only_the_clusters_instances(
    example_synth: Synth,
) -> None:
    statements = _controller_statements(example_synth)
    by_action: dict[str, list[dict[str, Any]]] = {}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        for action in _list(statement["Action"]):
            by_action.setdefault(action, []).append(statement)
    # Terminate: instances tagged for this cluster, nothing else.
    (terminate,) = by_action["ec2:TerminateInstances"]
    assert terminate["Condition"] == {"StringEquals": {"aws:ResourceTag/gpucluster:cluster": "example"}}
    # Launch: an instance only with the cluster tag in the request; launch templates only the cluster's.
    launches = by_action["ec2:CreateFleet"]
    instance = [s for s in launches if "instance/*" in json.dumps(s["Resource"])]
    assert [s["Condition"] for s in instance] == [
        {"StringEquals": {"aws:RequestTag/gpucluster:cluster": "example"}}
    ]
    templates = [s for s in launches if "launch-template" in json.dumps(s["Resource"])]
    lt_ids = set(_resources(example_synth, "AWS::EC2::LaunchTemplate"))
    named = {
        part["Ref"]
        for s in templates
        for r in s["Resource"]
        for part in r["Fn::Join"][1]
        if isinstance(part, dict)
    }
    assert named & lt_ids == lt_ids
    # Tags after launch: only the node name tags, only on the cluster's instances.
    later = [s for s in by_action["ec2:CreateTags"] if "aws:TagKeys" in json.dumps(s.get("Condition", {}))]
    assert [s["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"] for s in later] == [
        ["gpucluster:node", "Name"]
    ]
    # Pass only the node role, only to EC2; unscoped resources only for describe calls.
    (pass_role,) = by_action["iam:PassRole"]
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    assert pass_role["Resource"]["Fn::GetAtt"][0].startswith("NodesRole")
    unscoped = {a for s in statements if s["Resource"] == "*" for a in _list(s["Action"])}
    assert unscoped and all(a.startswith("ec2:Describe") for a in unscoped)


def test_a_rack_controller_assumes_the_role_through_roles_anywhere_with_its_own_certificate(
    example_synth: Synth,
) -> None:
    template = example_synth.template("Capacity")
    aws = example_synth.cluster.aws
    assert aws is not None and aws.controller_access is not None
    (anchor,) = template.find_resources("AWS::RolesAnywhere::TrustAnchor").values()
    assert anchor["Properties"]["Source"] == {
        "SourceType": "AWS_ACM_PCA",
        "SourceData": {"AcmPcaArn": aws.controller_access.acm_pca_arn},
    }
    (profile,) = template.find_resources("AWS::RolesAnywhere::Profile").values()
    assert profile["Properties"]["DurationSeconds"] == aws.controller_access.session_seconds
    roles = template.find_resources("AWS::IAM::Role")
    (role,) = [r for i, r in roles.items() if i.startswith("ControllerRole")]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assume = next(s for s in trust if s["Action"] == "sts:AssumeRole")
    assert assume["Principal"] == {"Service": "rolesanywhere.amazonaws.com"}
    assert assume["Condition"]["StringEquals"] == {"aws:PrincipalTag/x509Subject/CN": "head01"}
    assert "aws:SourceArn" in assume["Condition"]["ArnEquals"]


def test_a_cloud_head_node_runs_with_the_controller_role(cloud_only_synth: Synth) -> None:
    template = cloud_only_synth.template("Capacity")
    assert not template.find_resources("AWS::RolesAnywhere::TrustAnchor")
    (instance,) = template.find_resources("AWS::EC2::Instance").values()
    profile_id = instance["Properties"]["IamInstanceProfile"]["Ref"]
    profile = template.find_resources("AWS::IAM::InstanceProfile")[profile_id]
    assert profile["Properties"]["Roles"][0]["Ref"].startswith("ControllerRole")


def test_the_munge_key_parameter_key_is_used_through_ssm_only(example_synth: Synth) -> None:
    (key_id,) = [i for i in _resources(example_synth, "AWS::KMS::Key") if i.startswith("MungeKey")]
    (alias,) = _resources(example_synth, "AWS::KMS::Alias").values()
    assert alias["Properties"] == {"AliasName": munge_key_alias("example"), "TargetKeyId": _arn_of(key_id)}
    # The controller publishes under the key the stack makes (power.json, as rendered).
    power = json.loads(render(example_synth.cluster, "aws")["power/power.json"])
    assert power["munge_key_kms_key"] == alias["Properties"]["AliasName"]
    policies = _resources(example_synth, "AWS::IAM::ManagedPolicy")
    (node_policy,) = [p for i, p in policies.items() if i.startswith("Nodes")]
    grants = {
        owner: [s for s in statements if s["Resource"] == _arn_of(key_id)]
        for owner, statements in (
            ("node", node_policy["Properties"]["PolicyDocument"]["Statement"]),
            ("controller", _controller_statements(example_synth)),
        )
    }
    assert [s["Action"] for s in grants["node"]] == ["kms:Decrypt"]
    assert [sorted(_list(s["Action"])) for s in grants["controller"]] == [["kms:Decrypt", "kms:Encrypt"]]
    aws = example_synth.cluster.aws
    assert aws is not None
    through_ssm = {"StringEquals": {"kms:ViaService": f"ssm.{aws.region}.amazonaws.com"}}
    assert all(s["Condition"] == through_ssm for s in grants["node"] + grants["controller"])


def _arn_of(logical_id: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def test_ec2_events_reach_an_encrypted_queue_only_the_controller_drains(example_synth: Synth) -> None:
    template = example_synth.template("Capacity")
    queues = _resources(example_synth, "AWS::SQS::Queue")
    (queue_id,) = [i for i, q in queues.items() if q["Properties"].get("QueueName")]
    queue = queues[queue_id]["Properties"]
    assert queue["QueueName"] == "gpucluster-example-spot-events"
    assert queue["KmsMasterKeyId"]["Fn::GetAtt"][1] == "Arn"
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 5
    (rule,) = _resources(example_synth, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.ec2"]
    assert set(pattern["detail-type"]) == {
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
    }
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    # Only EventBridge, only from this rule, may send; and only over TLS.
    policy = json.dumps(template.find_resources("AWS::SQS::QueuePolicy"))
    assert '"ArnNotEquals": {"aws:SourceArn": {"Fn::GetAtt": ["SpotEventsRule' in policy
    assert '"aws:SecureTransport": "false"' in policy
    statements = _controller_statements(example_synth)
    sqs_grants = [s for s in statements if any(a.startswith("sqs:") for a in _list(s["Action"]))]
    assert [s["Resource"] for s in sqs_grants] == [{"Fn::GetAtt": [queue_id, "Arn"]}]
    assert sorted(_list(sqs_grants[0]["Action"])) == [
        "sqs:DeleteMessage",
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
    ]


def test_a_cluster_without_spot_groups_has_no_events_queue(cloud_only_synth: Synth) -> None:
    aws = cloud_only_synth.cluster.aws
    assert aws is not None
    has_spot = any(g.market == "spot" for g in aws.capacity)
    assert bool(_resources(cloud_only_synth, "AWS::Events::Rule")) == has_spot
