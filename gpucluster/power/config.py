"""What the power programs know: /etc/gpucluster/power.json, rendered from the cluster file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster import names

if TYPE_CHECKING:  # the controller runs the programs without the loader's dependencies
    from gpucluster.clusterfile.model import Cluster
    from gpucluster.clusterfile.model.aws import CapacityGroup

DEFAULT_PATH = Path(names.POWER_CONFIG)


@dataclass(frozen=True, kw_only=True)
class GroupConfig:
    """One capacity group: its Slurm node names, market and the instance types it may launch."""

    name: str
    market: str
    instance_types: tuple[str, ...]
    max_count: int
    min_count: int = 0  # the first min_count nodes are static: kept powered up
    # A group of mixed GPU models names each model's nodes apart (`<group>-<n>`, `<group>-h200-<n>` …):
    # name prefix → the instance types launched under it. Empty: every `<group>-<n>` may launch any type.
    models: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def prefix_of(self, node: str) -> str | None:
        """The name prefix of one of this group's Slurm node names (`<prefix>-<n>`), else None."""
        prefix, _, number = node.rpartition("-")
        known = prefix in self.models if self.models else prefix == self.name
        return prefix if known and number.isdigit() and 1 <= int(number) <= self.max_count else None

    def owns(self, node: str) -> bool:
        """Whether node is one of this group's Slurm node names."""
        return self.prefix_of(node) is not None

    def static(self, node: str) -> bool:
        """Whether node is one of the group's always-on nodes (the first min_count of its own names)."""
        return self.prefix_of(node) == self.name and int(node.rpartition("-")[2]) <= self.min_count

    def types_of(self, node: str) -> tuple[str, ...]:
        """The instance types a node of this group may launch as."""
        return self.models.get(self.prefix_of(node) or "", self.instance_types)


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
            models=_models(group),
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


def _models(group: CapacityGroup) -> dict[str, tuple[str, ...]]:
    """A mixed group's name prefix per GPU model with that model's instance types; {} for one model."""
    # The power programs load this module on the controller; only rendering needs the catalog.
    from gpucluster.clusterfile.nodes import cloud_variants  # noqa: PLC0415

    variants = cloud_variants(group)
    return {v.prefix: v.instance_types for v in variants} if len(variants) > 1 else {}


def load(path: Path = DEFAULT_PATH) -> PowerConfig:
    """Read the configuration file."""
    data: dict[str, Any] = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    groups = tuple(
        GroupConfig(
            **{
                **group,
                "instance_types": tuple(group["instance_types"]),
                "models": {prefix: tuple(types) for prefix, types in group.get("models", {}).items()},
            }
        )
        for group in data.pop("groups")
    )
    return PowerConfig(**data, groups=groups)
