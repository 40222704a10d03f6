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


UbuntuRelease = Literal["ubuntu-22.04", "ubuntu-24.04"]
AmiId = Annotated[str, StringConstraints(pattern=r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")]
# Canonical's public SSM parameters of its official Ubuntu Server AMIs (amd64, EBS):
# https://documentation.ubuntu.com/aws/aws-how-to/instances/find-ubuntu-images/
CANONICAL_AMI_PARAMETERS: dict[str, str] = {
    "ubuntu-22.04": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
    "ubuntu-24.04": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
}


class NodeImage(Strict):
    """The cloud node image: EC2 Image Builder runs the node playbook on an official Ubuntu base."""

    base: UbuntuRelease = Field(default="ubuntu-22.04", description="Ubuntu release the image starts from.")
    parent_ssm_parameter: Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9_.\-/]{1,1000}$")] | None = (
        Field(
            default=None,
            description="SSM parameter naming the parent AMI; default: Canonical's for `base`.",
        )
    )
    build_instance_type: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")] = Field(
        default="m7i.2xlarge",
        description="Instance type that builds the image (no GPU needed: drivers build with DKMS).",
    )
    root_volume_gib: Annotated[int, Field(ge=30, le=1024)] = Field(
        default=100, description="Root volume of the build instance and of the image, in GiB."
    )

    @property
    def parent_parameter(self) -> str:
        """The SSM parameter Image Builder resolves to the parent AMI at build time."""
        return self.parent_ssm_parameter or CANONICAL_AMI_PARAMETERS[self.base]


class Aws(Strict):
    """Cloud capacity in one region and availability zone."""

    region: Annotated[str, StringConstraints(pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")]
    availability_zone: str
    account: Annotated[str, StringConstraints(pattern=r"^[0-9]{12}$")] | None = None
    vpc_cidr: IPv4Network = IPv4Network("10.100.0.0/16")
    onprem_cidrs: list[IPv4Network] = Field(default_factory=list)
    egress: bool = False  # NAT gateway for package installs; off keeps GPU subnets closed
    vpn: Vpn | None = None
    transit_gateway_id: Annotated[str, StringConstraints(pattern=r"^tgw-[0-9a-f]{8,17}$")] | None = Field(
        default=None,
        description="Route onprem_cidrs through this transit gateway (also the way to Direct Connect).",
    )
    image: NodeImage | None = Field(
        default=None,
        description="How the node image is built (the default when ami_id is not given).",
    )
    ami_id: AmiId | None = Field(
        default=None,
        description="Launch this AMI instead of building one; excludes `image`.",
    )
    head_node: HeadNode | None = None
    capacity: list[CapacityGroup] = Field(default_factory=list)
    checkpoint: CheckpointBucket | None = CheckpointBucket()
    budget: Budget | None = None
    interruption_emails: list[Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]] = (
        Field(default_factory=list)
    )

    @property
    def builds_image(self) -> bool:
        """Whether the image stack builds the node image (no explicit `ami_id`)."""
        return self.ami_id is None

    @property
    def node_image(self) -> NodeImage:
        """The image recipe settings: as written, or the defaults."""
        return self.image or NodeImage()
