"""What the power programs know: /etc/gpucluster/power.json, rendered from the cluster file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster import names

if TYPE_CHECKING:  # the controller runs the programs without the loader's dependencies
    from gpucluster.clusterfile.model import Cluster

DEFAULT_PATH = Path(names.POWER_CONFIG)


@dataclass(frozen=True, kw_only=True)
class GroupConfig:
    """One capacity group: its Slurm node names, market and the instance types it may launch."""

    name: str
    market: str
    instance_types: tuple[str, ...]
    max_count: int
    min_count: int = 0  # the first min_count nodes are static: kept powered up

    def static(self, node: str) -> bool:
        """Whether node is one of the group's always-on nodes."""
        return self.owns(node) and int(node.rpartition("-")[2]) <= self.min_count

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
    # The programs' AWS configuration (credential_process of IAM Roles Anywhere on a rack controller);
    # used when it exists and AWS_CONFIG_FILE is not set. slurmctld passes the programs no environment.
    aws_config_file: str = "/etc/gpucluster/aws/config"
    munge_key_kms_key: str | None = None  # KMS key (alias) of the munge key parameter; None: aws/ssm
    events_queue: str | None = None  # SQS queue of EC2's spot and instance events (spot groups only)
    checkpoint_signal: str = "USR1"  # what jobs on an interrupted node get (aws.spot)
    tags: dict[str, str] = field(default_factory=dict)

    def group_of(self, node: str) -> GroupConfig | None:
        """The capacity group a Slurm node name belongs to (None: not a cloud node)."""
        return next((group for group in self.groups if group.owns(node)), None)

    def to_json(self, comment: str = "") -> str:
        """The file's text; a comment (JSON has none) goes under the ignored key `_comment`."""
        data = {**({"_comment": comment.splitlines()} if comment else {}), **asdict(self)}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def from_cluster(cluster: Cluster) -> PowerConfig:
    """The power configuration of a cluster file (its AWS capacity groups)."""
    assert cluster.aws is not None
    groups = tuple(
        GroupConfig(
            name=group.name,
            market=group.market,
            instance_types=(group.instance_type, *group.fallback_instance_types),
            max_count=group.max_count,
            min_count=group.min_count,
        )
        for group in cluster.aws.capacity
    )
    return PowerConfig(
        cluster=cluster.name,
        region=cluster.aws.region,
        capacity_parameter=names.capacity_parameter(cluster.name),
        groups=groups,
        unavailable_seconds=cluster.aws.burst.unavailable_minutes * 60,
        munge_key_kms_key=names.munge_key_alias(cluster.name),
        events_queue=names.spot_events_queue(cluster.name)
        if any(g.market == "spot" for g in groups)
        else None,
        checkpoint_signal=cluster.aws.spot.checkpoint_signal,
    )


def load(path: Path = DEFAULT_PATH) -> PowerConfig:
    """Read the configuration file."""
    data: dict[str, Any] = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    groups = tuple(
        GroupConfig(**{**group, "instance_types": tuple(group["instance_types"])})
        for group in data.pop("groups")
    )
    return PowerConfig(**data, groups=groups)
