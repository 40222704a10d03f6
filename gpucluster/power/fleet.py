"""Launch a group's nodes with one instant EC2 Fleet call; terminate instances by their node tags.

https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instant-fleet.html
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
TAG_WORKERS = 16


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
    config: PowerConfig,
    group: GroupConfig,
    deployed: DeployedGroup,
    count: int,
    instance_types: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The CreateFleet request: all-or-nothing (MinTargetCapacity) in one instance type and one AZ.

    instance_types: the types the nodes may launch as (one GPU model's, in a mixed group); default all.
    """
    placement = {"Placement": {"GroupName": deployed.placement_group}} if deployed.placement_group else {}
    overrides = [
        {"InstanceType": t, "SubnetId": s, **placement}
        for t in instance_types or group.instance_types
        for s in deployed.subnet_ids
    ]
    all_or_nothing = {"SingleInstanceType": True, "SingleAvailabilityZone": True, "MinTargetCapacity": count}
    # A capacity block is its own capacity type; its reservation is named in the launch template, and
    # the fleet must not name one again (EC2 rejects CapacityReservationOptions with capacity-block):
    # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-fleet-launch-instances-capacity-blocks-walkthrough.html
    capacity_type = {"spot": "spot", "capacity-block": "capacity-block"}.get(group.market, "on-demand")
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
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": count,
            "DefaultTargetCapacityType": capacity_type,
        },
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
    if capacity_type == "spot":
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized", **all_or_nothing}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price", **all_or_nothing}
        if capacity_type == "on-demand" and deployed.capacity_reservation_id is not None:
            request["OnDemandOptions"]["CapacityReservationOptions"] = {
                "UsageStrategy": "use-capacity-reservations-first"
            }
    return request


def launch(
    ec2: EC2Client, config: PowerConfig, group: GroupConfig, deployed: DeployedGroup, nodes: list[str]
) -> Launch:
    """Launch one instance per node, all or none, and tag each with its node name; never waits for boot.

    The nodes share one name prefix (one GPU model of a mixed group): they launch as that model's types.
    """
    result = Launch(group.name, list(nodes))
    request = fleet_request(config, group, deployed, len(nodes), group.types_of(nodes[0]))
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
    # One tag call per instance (each gets its own name), sixteen at a time: a 500-node job is tagged
    # in seconds, not minutes. botocore clients are thread-safe.
    pairs = list(zip(sorted(nodes), ids, strict=False))
    with ThreadPoolExecutor(max_workers=TAG_WORKERS) as pool:
        list(pool.map(lambda pair: _tag(ec2, *pair), pairs))
    result.instances.update(pairs)
    return result


def _tag(ec2: EC2Client, node: str, instance: str) -> None:
    """Name one instance after its Slurm node (the node reads the tag at boot)."""
    tags: list[Any] = [{"Key": NODE_TAG, "Value": node}, {"Key": "Name", "Value": node}]
    with_throttle_retry(lambda: ec2.create_tags(Resources=[instance], Tags=tags))


@dataclass(frozen=True)
class Instance:
    """One EC2 instance of the cluster as the reconciler sees it."""

    id: str
    node: str | None  # its NODE_TAG; None before the ResumeProgram tagged it
    state: str  # pending, running, shutting-down, terminated, stopping, stopped
    address: str  # private IPv4 address ("" before one is assigned)
    launched: float  # epoch seconds

    @property
    def live(self) -> bool:
        """Pending or running: it costs money and may run a node."""
        return self.state in ("pending", "running")


def describe(
    ec2: EC2Client, config: PowerConfig, nodes: list[str] | None = None, group: str | None = None
) -> list[Instance]:
    """Every instance tagged for this cluster (only the named nodes' or group's if given), in any state."""
    found: list[Instance] = []
    filters: list[Any] = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [config.cluster]}]
    if nodes is not None:
        filters.append({"Name": f"tag:{NODE_TAG}", "Values": nodes})
    if group is not None:
        filters.append({"Name": f"tag:{GROUP_TAG}", "Values": [group]})
    for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
                found.append(
                    Instance(
                        id=instance["InstanceId"],
                        node=tags.get(NODE_TAG),
                        state=instance["State"]["Name"],
                        address=instance.get("PrivateIpAddress", ""),
                        launched=instance["LaunchTime"].timestamp(),
                    )
                )
    return found


def terminate_ids(ec2: EC2Client, ids: list[str]) -> None:
    """Terminate instances by id, 500 per call (EC2's limit per request is 1000)."""
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        with_throttle_retry(lambda batch=batch: ec2.terminate_instances(InstanceIds=batch))  # type: ignore[misc]


def terminate(ec2: EC2Client, config: PowerConfig, nodes: list[str]) -> list[str]:
    """Terminate every live instance tagged as one of nodes in this cluster; returns their ids."""
    ids = sorted(i.id for i in describe(ec2, config, nodes) if i.live)
    terminate_ids(ec2, ids)
    return ids
