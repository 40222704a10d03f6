"""AWS part of the cluster file: region, network, capacity groups, checkpoint bucket, budget."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, StringConstraints

from gpucluster.clusterfile.model.common import Name, Strict

Market = Literal["on-demand", "spot", "capacity-block"]
EfaLayout = Literal["efa-only", "efa"]
InterfaceType = Literal["interface", "efa", "efa-only"]


class EfaInterface(Strict):
    """One network interface of an explicit EFA layout."""

    network_card: NonNegativeInt
    device_index: Annotated[int, Field(ge=0, le=1)]
    type: InterfaceType


class CapacityGroup(Strict):
    """GPU instances of one type and market that share a placement group."""

    name: Name
    instance_type: str  # checked against the catalog by a validator
    fallback_instance_types: list[str] = Field(default_factory=list)
    market: Market = "on-demand"
    min_count: NonNegativeInt = 0
    max_count: PositiveInt
    capacity_reservation_id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-f]{8,17}$")] | None = None
    efa: bool = True
    efa_layout: EfaLayout = "efa-only"  # AWS's current recommendation: ENA primary + EFA-only cards
    efa_interfaces: list[EfaInterface] | None = None  # explicit layout; overrides efa_layout
    placement_group: bool | None = None  # default: True for EFA groups, never with capacity blocks
    root_volume_gib: Annotated[int, Field(ge=100, le=16384)] = 500

    @property
    def uses_placement_group(self) -> bool:
        """Whether this group launches into a cluster placement group."""
        if self.placement_group is not None:
            return self.placement_group
        return self.efa and self.market != "capacity-block"


class LifecycleTier(Strict):
    """Move checkpoints to a cheaper storage class after some days."""

    after_days: PositiveInt
    storage_class: Literal["STANDARD_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"]


class CheckpointBucket(Strict):
    """The S3 bucket that training jobs checkpoint to: versioned, encrypted, private, retained."""

    prefix: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9/_-]{0,100}$")] = "checkpoints"
    encryption: Literal["kms", "s3"] = "kms"
    retention_days: PositiveInt | None = None  # expire current checkpoints; None keeps them
    noncurrent_version_days: PositiveInt = 30
    abort_incomplete_upload_days: PositiveInt = 7
    tiers: list[LifecycleTier] = Field(default_factory=list)


class Vpn(Strict):
    """Site-to-site VPN toward the on-prem network."""

    customer_gateway_address: IPv4Address
    bgp_asn: Annotated[int, Field(ge=1, le=4294967295)] = 65000


class Budget(Strict):
    """A monthly AWS budget with alert thresholds in percent of the limit."""

    monthly_limit_usd: Annotated[float, Field(gt=0)]
    alert_thresholds_pct: list[Annotated[float, Field(gt=0, le=200)]] = Field(
        default_factory=lambda: [50.0, 80.0, 100.0]
    )
    emails: list[Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]] = Field(
        default_factory=list
    )


class HeadNode(Strict):
    """A Slurm controller host in the VPC, for clusters whose controller is not on-prem."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,62}$")] = "head"
    instance_type: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")] = "m7i.2xlarge"
    address: IPv4Address  # fixed private address inside aws.vpc_cidr


class Aws(Strict):
    """Cloud capacity in one region and availability zone."""

    region: Annotated[str, StringConstraints(pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")]
    availability_zone: str
    account: Annotated[str, StringConstraints(pattern=r"^[0-9]{12}$")] | None = None
    vpc_cidr: IPv4Network = IPv4Network("10.100.0.0/16")
    onprem_cidrs: list[IPv4Network] = Field(default_factory=list)
    egress: bool = False  # NAT gateway for package installs; off keeps GPU subnets closed
    vpn: Vpn | None = None
    ami_ssm_parameter: str = (
        "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
    )
    head_node: HeadNode | None = None
    capacity: list[CapacityGroup] = Field(default_factory=list)
    checkpoint: CheckpointBucket | None = CheckpointBucket()
    budget: Budget | None = None
    interruption_emails: list[Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]] = (
        Field(default_factory=list)
    )
