"""What the power programs know: /etc/gpucluster/power.json, rendered from the cluster file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpucluster import names
from gpucluster.clusterfile.model import Cluster

DEFAULT_PATH = Path("/etc/gpucluster/power.json")


@dataclass(frozen=True, kw_only=True)
class GroupConfig:
    """One capacity group: its Slurm node names, market and the instance types it may launch."""

    name: str
    market: str
    instance_types: tuple[str, ...]
    max_count: int
    fallback: str | None = None  # the group a job may run on when this one has no capacity

    def owns(self, node: str) -> bool:
        """Whether node is one of this group's Slurm node names (`<group>-<n>`)."""
        prefix, _, number = node.rpartition("-")
        return prefix == self.name and number.isdigit() and 1 <= int(number) <= self.max_count


@dataclass(frozen=True, kw_only=True)
class PowerConfig:
    """The cluster's cloud groups, where the deployed capacity is published, and the programs' state."""

    cluster: str
    region: str
    capacity_parameter: str  # SSM parameter the capacity stack writes (launch templates, subnets)
    groups: tuple[GroupConfig, ...]
    unavailable_seconds: int = 600  # a group without capacity is skipped this long
    state_dir: str = "/var/lib/gpucluster/power"
    endpoint_url: str | None = None  # an emulated AWS (tests); None: AWS itself
    tags: dict[str, str] = field(default_factory=dict)

    def group_of(self, node: str) -> GroupConfig | None:
        """The capacity group a Slurm node name belongs to (None: not a cloud node)."""
        return next((group for group in self.groups if group.owns(node)), None)

    def to_json(self) -> str:
        """The file's text."""
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def from_cluster(cluster: Cluster) -> PowerConfig:
    """The power configuration of a cluster file (its AWS capacity groups)."""
    assert cluster.aws is not None
    groups = tuple(
        GroupConfig(
            name=group.name,
            market=group.market,
            instance_types=(group.instance_type, *group.fallback_instance_types),
            max_count=group.max_count,
        )
        for group in cluster.aws.capacity
    )
    return PowerConfig(
        cluster=cluster.name,
        region=cluster.aws.region,
        capacity_parameter=names.capacity_parameter(cluster.name),
        groups=groups,
    )


def load(path: Path = DEFAULT_PATH) -> PowerConfig:
    """Read the configuration file."""
    data: dict[str, Any] = json.loads(path.read_text())
    groups = tuple(
        GroupConfig(**{**group, "instance_types": tuple(group["instance_types"])})
        for group in data.pop("groups")
    )
    return PowerConfig(**data, groups=groups)
