"""Launch a group's nodes with one instant EC2 Fleet call; terminate instances by their node tags.

https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instant-fleet.html
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from gpucluster.names import CLUSTER_TAG, GROUP_TAG, NODE_TAG
from gpucluster.power.capacity import DeployedGroup
from gpucluster.power.config import GroupConfig, PowerConfig

if TYPE_CHECKING:
    from types_boto3_ec2 import EC2Client

# Only throttling is retried: any other error is an answer (capacity, limits, a bad request).
THROTTLING = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})
T = TypeVar("T")


@dataclass
class Launch:
    """The outcome of one group's launch: node name to instance id, or the EC2 error that stopped it."""

    group: str
    nodes: list[str]
    instances: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # "<EC2 error code>: <message>"


def with_throttle_retry(call: Callable[[], T], *, attempts: int = 6, base_s: float = 0.2) -> T:
    """Run call; on EC2 throttling wait base_s, 2×base_s … and try again."""
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in THROTTLING or attempt == attempts - 1:
                raise
            time.sleep(base_s * 2**attempt)
    raise AssertionError("unreachable")


def fleet_request(
    config: PowerConfig, group: GroupConfig, deployed: DeployedGroup, count: int
) -> dict[str, Any]:
    """The CreateFleet request: all-or-nothing (MinTargetCapacity) in one instance type and one AZ."""
    placement = {"Placement": {"GroupName": deployed.placement_group}} if deployed.placement_group else {}
    overrides = [
        {"InstanceType": t, "SubnetId": s, **placement}
        for t in group.instance_types
        for s in deployed.subnet_ids
    ]
    all_or_nothing = {"SingleInstanceType": True, "SingleAvailabilityZone": True, "MinTargetCapacity": count}
    market = "spot" if group.market == "spot" else "on-demand"
    request: dict[str, Any] = {
        "Type": "instant",
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateId": deployed.launch_template_id,
                    "Version": "$Latest",
                },
                "Overrides": overrides,
            }
        ],
        "TargetCapacitySpecification": {"TotalTargetCapacity": count, "DefaultTargetCapacityType": market},
        "TagSpecifications": [
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": CLUSTER_TAG, "Value": config.cluster},
                    {"Key": GROUP_TAG, "Value": group.name},
                ],
            }
        ],
    }
    if market == "spot":
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized", **all_or_nothing}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price", **all_or_nothing}
        if deployed.capacity_reservation_id is not None:
            request["OnDemandOptions"]["CapacityReservationOptions"] = {
                "UsageStrategy": "use-capacity-reservations-first"
            }
    return request


def launch(
    ec2: EC2Client, config: PowerConfig, group: GroupConfig, deployed: DeployedGroup, nodes: list[str]
) -> Launch:
    """Launch one instance per node, all or none, and tag each with its node name; never waits for boot."""
    result = Launch(group.name, list(nodes))
    request = fleet_request(config, group, deployed, len(nodes))
    try:
        response = with_throttle_retry(lambda: ec2.create_fleet(**request))
    except ClientError as error:
        details = error.response.get("Error", {})
        result.error = f"{details.get('Code', 'Unknown')}: {details.get('Message', '')}"
        return result
    ids = sorted(i for entry in response.get("Instances", []) for i in entry.get("InstanceIds", []))
    if len(ids) < len(nodes):
        # Fewer than all: a multi-node job cannot start on part of its nodes, so nothing stays running.
        if ids:
            with_throttle_retry(lambda: ec2.terminate_instances(InstanceIds=ids))
        errors = response.get("Errors", [])
        code = (
            errors[0].get("ErrorCode", "InsufficientInstanceCapacity")
            if errors
            else "InsufficientInstanceCapacity"
        )
        message = (
            errors[0].get("ErrorMessage", "") if errors else f"{len(ids)} of {len(nodes)} instances launched"
        )
        result.error = f"{code}: {message}"
        return result
    for node, instance in zip(sorted(nodes), ids, strict=False):
        with_throttle_retry(
            lambda node=node, instance=instance: ec2.create_tags(  # type: ignore[misc]
                Resources=[instance], Tags=[{"Key": NODE_TAG, "Value": node}, {"Key": "Name", "Value": node}]
            )
        )
        result.instances[node] = instance
    return result


def instances_of(ec2: EC2Client, config: PowerConfig, nodes: list[str] | None = None) -> dict[str, list[str]]:
    """Live (pending or running) instances of this cluster by node name; only the named nodes if given."""
    filters: list[Any] = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [config.cluster]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    if nodes is not None:
        filters.append({"Name": f"tag:{NODE_TAG}", "Values": nodes})
    found: dict[str, list[str]] = {}
    for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
                found.setdefault(tags.get(NODE_TAG, ""), []).append(instance["InstanceId"])
    return found


def terminate(ec2: EC2Client, config: PowerConfig, nodes: list[str]) -> list[str]:
    """Terminate every live instance tagged as one of nodes in this cluster; returns their ids."""
    ids = sorted(i for node_ids in instances_of(ec2, config, nodes).values() for i in node_ids)
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        with_throttle_retry(lambda batch=batch: ec2.terminate_instances(InstanceIds=batch))  # type: ignore[misc]
    return ids
