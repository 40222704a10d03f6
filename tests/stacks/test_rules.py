"""Our rule pack: each rule passes a compliant template and names the problem in a non-compliant one."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.efa_layout import standard_layout
from stacks.nag import (
    checkpoint_bucket,
    efa_layout,
    efa_security_group,
    image_builder_imdsv2,
    imdsv2,
    no_public_ip,
    placement,
)
from stacks.nag.plugin import RULES, findings
from stacks.nag.template import Rule, Template
from stacks.parts.efa_security_group import NO_TRAFFIC

SG = {"Fn::GetAtt": ["Efa", "GroupId"]}


def _interfaces(layout: str = "efa-only", itype: str = "p5.48xlarge") -> list[dict[str, Any]]:
    return [
        {
            "NetworkCardIndex": i.network_card,
            "DeviceIndex": i.device_index,
            "InterfaceType": i.type,
            "Groups": [SG],
            **({"AssociatePublicIpAddress": False} if (i.network_card, i.device_index) == (0, 0) else {}),
        }
        for i in standard_layout(layout, INSTANCE_TYPES[itype])
    ]


def _set_capacity(doc: dict[str, Any], **changes: Any) -> None:
    """Change the capacity record of group g (a plain JSON value: refs written as logical ids)."""
    record = {"launch_template_id": "Lt", "subnet_ids": ["subnet-1"], "placement_group": "Pg", **changes}
    _props(doc, "Capacity")["Value"] = json.dumps({"groups": {"g": record}})


def compliant() -> dict[str, Any]:
    """A hand-built template every rule accepts: one p5 group, its SG, placement group and a bucket."""
    return {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {
                        "InstanceType": "p5.48xlarge",
                        "MetadataOptions": {"HttpTokens": "required"},
                        "NetworkInterfaces": _interfaces(),
                        "Placement": {"GroupName": {"Ref": "Pg"}},
                    }
                },
            },
            "Efa": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"SecurityGroupEgress": [NO_TRAFFIC]}},
            "EfaIn": {
                "Type": "AWS::EC2::SecurityGroupIngress",
                "Properties": {"GroupId": SG, "SourceSecurityGroupId": SG, "IpProtocol": "-1"},
            },
            "EfaOut": {
                "Type": "AWS::EC2::SecurityGroupEgress",
                "Properties": {"GroupId": SG, "DestinationSecurityGroupId": SG, "IpProtocol": "-1"},
            },
            "Pg": {"Type": "AWS::EC2::PlacementGroup", "Properties": {"Strategy": "cluster"}},
            # What the capacity stack publishes for the power programs (stacks/capacity_stack.py).
            "Capacity": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": "/gpucluster/t/capacity",
                    "Type": "String",
                    "Value": {
                        "Fn::Join": [
                            "",
                            [
                                '{"groups":{"g":{"launch_template_id":"',
                                {"Ref": "Lt"},
                                '","subnet_ids":["',
                                {"Fn::ImportValue": "subnet"},
                                '"],"placement_group":"',
                                {"Ref": "Pg"},
                                '","instance_types":["p5.48xlarge","p5e.48xlarge"]}}}',
                            ],
                        ]
                    },
                },
            },
            "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"MapPublicIpOnLaunch": False}},
            "Head": {
                "Type": "AWS::EC2::Instance",
                "Properties": {"LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}, "Version": "1"}},
            },
            "Build": {
                "Type": "AWS::ImageBuilder::InfrastructureConfiguration",
                "Properties": {
                    "Name": "build",
                    "InstanceProfileName": "profile",
                    "InstanceMetadataOptions": {"HttpTokens": "required"},
                },
            },
            "Bucket": {
                "Type": "AWS::S3::Bucket",
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
                "Properties": {"VersioningConfiguration": {"Status": "Enabled"}},
            },
            "BucketPolicy": {
                "Type": "AWS::S3::BucketPolicy",
                "Properties": {
                    "Bucket": {"Ref": "Bucket"},
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Effect": "Deny",
                                "Principal": {"AWS": "*"},
                                "Action": "s3:*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        ]
                    },
                },
            },
        }
    }


def _props(doc: dict[str, Any], logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = doc["Resources"][logical_id]["Properties"]
    return props


def _lt_data(doc: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = _props(doc, "Lt")["LaunchTemplateData"]
    return data


def _messages(rule: Rule, doc: dict[str, Any]) -> list[str]:
    return [f"{lid}: {msg}" for lid, msg in rule.check(Template(doc))]


def test_compliant_template_passes_every_rule() -> None:
    assert findings(compliant()) == []


def test_every_rule_has_an_id_description_and_fix() -> None:
    ids = [rule.id for rule in RULES]
    assert len(set(ids)) == len(ids) == 7
    assert all(rule.id.startswith("GpuCluster-") and rule.description and rule.fix for rule in RULES)


# --- GpuCluster-EfaLayout ---------------------------------------------------------------------


def test_efa_layout_accepts_the_efa_variant() -> None:
    doc = compliant()
    _lt_data(doc)["NetworkInterfaces"] = _interfaces("efa")
    assert _messages(efa_layout.RULE, doc) == []


def test_efa_layout_names_a_missing_card() -> None:
    doc = compliant()
    _lt_data(doc)["NetworkInterfaces"] = [i for i in _interfaces() if i["NetworkCardIndex"] != 17]
    messages = _messages(efa_layout.RULE, doc)
    assert any("network card 17 has no EFA interface" in m for m in messages), messages
    assert all(m.startswith("Lt: ") for m in messages)


def test_efa_layout_checks_fallback_types_with_fewer_cards() -> None:
    doc = compliant()
    _set_capacity(doc, instance_types=["p5.48xlarge", "p5en.48xlarge"])  # p5en: 16 cards, not 32
    messages = _messages(efa_layout.RULE, doc)
    assert any(m.startswith("Lt: p5en.48xlarge: network card 16 does not exist") for m in messages), messages


def test_efa_layout_flags_a_gpu_template_without_interfaces() -> None:
    doc = compliant()
    del _lt_data(doc)["NetworkInterfaces"]
    assert any("network card 0 has no EFA interface" in m for m in _messages(efa_layout.RULE, doc))


def test_efa_layout_flags_an_efa_only_primary_and_a_duplicate_slot() -> None:
    doc = compliant()
    interfaces = _interfaces()
    interfaces[0]["InterfaceType"] = "efa-only"
    interfaces.append(dict(interfaces[5]))
    _lt_data(doc)["NetworkInterfaces"] = interfaces
    messages = " | ".join(_messages(efa_layout.RULE, doc))
    assert "cannot be efa-only" in messages
    assert "listed 2 times" in messages


# --- GpuCluster-EfaSelfReference --------------------------------------------------------------


def test_self_reference_needs_ingress() -> None:
    doc = compliant()
    del doc["Resources"]["EfaIn"]
    messages = _messages(efa_security_group.RULE, doc)
    assert messages and "allows all ingress or egress" in messages[0]


def test_self_reference_needs_egress_to_itself_not_elsewhere() -> None:
    doc = compliant()
    _props(doc, "EfaOut")["DestinationSecurityGroupId"] = {"Fn::GetAtt": ["Other", "GroupId"]}
    assert _messages(efa_security_group.RULE, doc)


def test_self_reference_flags_the_default_allow_all_egress() -> None:
    doc = compliant()
    del _props(doc, "Efa")["SecurityGroupEgress"]
    messages = _messages(efa_security_group.RULE, doc)
    assert messages and "allow-all egress" in messages[0]


# --- GpuCluster-EfaPlacement -------------------------------------------------------------------


def test_placement_requires_a_cluster_placement_group() -> None:
    doc = compliant()
    del _lt_data(doc)["Placement"]
    assert _messages(placement.RULE, doc) == [
        "Lt: EFA group without a cluster placement group in this template"
    ]


def test_placement_rejects_a_spread_strategy() -> None:
    doc = compliant()
    _props(doc, "Pg")["Strategy"] = "spread"
    assert "EFA needs 'cluster'" in _messages(placement.RULE, doc)[0]


def test_placement_requires_a_single_subnet() -> None:
    doc = compliant()
    _set_capacity(doc, subnet_ids=["subnet-1", "subnet-2"])
    assert "spans 2 subnets" in _messages(placement.RULE, doc)[0]


def test_capacity_block_with_a_placement_group_is_rejected() -> None:
    doc = compliant()
    _lt_data(doc)["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    assert _messages(placement.RULE, doc) == [
        "Lt: capacity block with a placement group: AWS rejects the launch"
    ]
    del _lt_data(doc)["Placement"]
    assert _messages(placement.RULE, doc) == []


# --- GpuCluster-Imdsv2 -------------------------------------------------------------------------


@pytest.mark.parametrize("tokens", [None, "optional"])
def test_imdsv2_required_on_launch_templates(tokens: str | None) -> None:
    doc = compliant()
    _lt_data(doc)["MetadataOptions"] = {"HttpTokens": tokens} if tokens else {}
    messages = _messages(imdsv2.RULE, doc)
    assert "Lt: MetadataOptions.HttpTokens is not 'required'" in messages
    assert "Head: instance without a launch template that requires IMDSv2" in messages


def test_imdsv2_instance_without_launch_template() -> None:
    doc = compliant()
    del _props(doc, "Head")["LaunchTemplate"]
    assert _messages(imdsv2.RULE, doc) == ["Head: instance without a launch template that requires IMDSv2"]


# --- GpuCluster-NoPublicIp ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: _lt_data(d)["NetworkInterfaces"][0].update(AssociatePublicIpAddress=True),
            "Lt: network card 0",
        ),
        (lambda d: _props(d, "Subnet").update(MapPublicIpOnLaunch=True), "Subnet: subnet maps public IPs"),
        (
            lambda d: _props(d, "Head").update(NetworkInterfaces=[{"AssociatePublicIpAddress": "true"}]),
            "Head: instance interface",
        ),
    ],
)
def test_no_public_ip(mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    doc = compliant()
    mutate(doc)
    messages = _messages(no_public_ip.RULE, doc)
    assert len(messages) == 1 and messages[0].startswith(expected), messages


# --- GpuCluster-CheckpointBucket ---------------------------------------------------------------


def test_bucket_must_be_versioned() -> None:
    doc = compliant()
    _props(doc, "Bucket")["VersioningConfiguration"] = {"Status": "Suspended"}
    assert _messages(checkpoint_bucket.RULE, doc) == ["Bucket: versioning is not enabled"]


def test_bucket_must_be_retained() -> None:
    doc = compliant()
    doc["Resources"]["Bucket"]["DeletionPolicy"] = "Delete"
    del doc["Resources"]["Bucket"]["UpdateReplacePolicy"]
    assert _messages(checkpoint_bucket.RULE, doc) == [
        "Bucket: DeletionPolicy is 'Delete', not 'Retain'",
        "Bucket: UpdateReplacePolicy is None, not 'Retain'",
    ]


def test_bucket_must_deny_plain_http() -> None:
    doc = compliant()
    _props(doc, "BucketPolicy")["PolicyDocument"]["Statement"][0]["Effect"] = "Allow"
    assert _messages(checkpoint_bucket.RULE, doc) == [
        "Bucket: no bucket policy denies requests without TLS (aws:SecureTransport false)"
    ]


# --- GpuCluster-ImageBuilderImdsv2 -------------------------------------------------------------


def test_image_build_instance_requires_imdsv2_tokens() -> None:
    doc = compliant()
    _props(doc, "Build")["InstanceMetadataOptions"] = {"HttpTokens": "optional"}
    assert _messages(image_builder_imdsv2.RULE, doc) == [
        "Build: InstanceMetadataOptions.HttpTokens is not 'required'"
    ]


def test_image_build_instance_without_metadata_options_is_flagged() -> None:
    doc = compliant()
    del _props(doc, "Build")["InstanceMetadataOptions"]
    assert _messages(image_builder_imdsv2.RULE, doc)
