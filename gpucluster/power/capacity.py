"""The deployed capacity: launch template and subnets per group, as the capacity stack publishes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types_boto3_ssm import SSMClient


@dataclass(frozen=True, kw_only=True)
class DeployedGroup:
    """What a launch needs that only exists after `cdk deploy`."""

    launch_template_id: str
    subnet_ids: tuple[str, ...]
    placement_group: str | None = None
    capacity_reservation_id: str | None = None


def read(ssm: SSMClient, parameter: str) -> dict[str, DeployedGroup]:
    """Group name to its deployed launch template and subnets (one SSM read)."""
    value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    groups: dict[str, dict[str, object]] = json.loads(value)["groups"]
    return {
        name: DeployedGroup(
            launch_template_id=str(group["launch_template_id"]),
            subnet_ids=tuple(str(s) for s in group["subnet_ids"]),  # type: ignore[attr-defined]
            placement_group=str(group["placement_group"]) if group.get("placement_group") else None,
            capacity_reservation_id=(
                str(group["capacity_reservation_id"]) if group.get("capacity_reservation_id") else None
            ),
        )
        for name, group in groups.items()
    }
