"""AWS part of the cluster file: region, network, capacity groups, checkpoint bucket, budget."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, StringConstraints, model_validator

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
    mixed_gpus: bool = Field(
        default=False,
        description=(
            "Fallback types may carry another GPU model: each model gets its own Slurm node names "
            "(<group>-<n> for the instance_type's model, <group>-<type>-<n> for another, e.g. "
            "p5-spot-h200-1) and line with its GRES type and feature, so a job asking for one model never "
            "lands on the other; the models share the group's max_count."
        ),
    )
    market: Market = "on-demand"
    min_count: NonNegativeInt = 0
    max_count: PositiveInt
    capacity_reservation_id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-f]{8,17}$")] | None = None
    efa: bool = True
    efa_layout: EfaLayout = "efa-only"  # AWS's current recommendation: ENA primary + EFA-only cards
    efa_interfaces: list[EfaInterface] | None = None  # explicit layout; overrides efa_layout
    placement_group: bool | None = None  # default: True for EFA groups, never with capacity blocks
    root_volume_gib: Annotated[int, Field(ge=100, le=16384)] = 500
    idle_minutes: Annotated[int, Field(ge=1, le=10080)] = Field(
        default=10, description="A node idle this long is powered down and its instance terminated."
    )
    resume_timeout_s: Annotated[int, Field(ge=60, le=7200)] = Field(
        default=900,
        description="A node not registered this long after its launch is set DOWN and its job requeued.",
    )

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


class ControllerAccess(Strict):
    """AWS credentials of a rack controller: IAM Roles Anywhere trusting the site's certificate authority.

    The controller presents a certificate whose subject CN is its Slurm host name; the role it gets may
    only launch, tag and terminate this cluster's instances (docs/security.md, "Controller credentials").
    """

    acm_pca_arn: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^arn:aws[a-z-]*:acm-pca:[a-z0-9-]+:[0-9]{12}:certificate-authority/[0-9a-f-]{36}$"
            ),
        ]
        | None
    ) = Field(default=None, description="The site's AWS Private CA that issues the controller's certificate.")
    ca_certificate: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----\s*$"
            ),
        ]
        | None
    ) = Field(
        default=None, description="The site's own CA certificate (PEM), when it is not an AWS Private CA."
    )
    session_seconds: Annotated[int, Field(ge=900, le=43200)] = 3600

    @model_validator(mode="after")
    def _one_anchor(self) -> ControllerAccess:
        if (self.acm_pca_arn is None) == (self.ca_certificate is None):
            raise ValueError(
                "name exactly one trust anchor: acm_pca_arn (AWS Private CA) or ca_certificate (PEM)"
            )
        return self


class Burst(Strict):
    """How the controller powers cloud nodes up and down (Slurm power saving and the power programs)."""

    resume_rate: NonNegativeInt = Field(default=0, description="Nodes resumed per minute; 0: no limit.")
    suspend_rate: NonNegativeInt = Field(default=0, description="Nodes suspended per minute; 0: no limit.")
    unavailable_minutes: Annotated[int, Field(ge=1, le=1440)] = Field(
        default=10,
        description="A group that had no capacity is skipped this long; its DOWN nodes then return.",
    )
    reconcile_seconds: Annotated[int, Field(ge=10, le=60)] = Field(
        default=30, description="Period of the reconciler on the controller."
    )


class Spot(Strict):
    """What the spot agent on each spot node does with EC2's notices (docs/burst-and-spot.md, "Spot")."""

    poll_seconds: Annotated[float, Field(ge=1, le=5)] = Field(
        default=5, description="Metadata polls per notice check; the notice comes two minutes ahead."
    )
    checkpoint_signal: Literal["USR1", "USR2", "TERM", "INT", "HUP"] = Field(
        default="USR1", description="Sent to every job's batch shell and steps on an interruption notice."
    )
    safety_margin_s: Annotated[int, Field(ge=5, le=100)] = Field(
        default=20, description="Jobs still on the node this long before the interruption are requeued."
    )
    requeue_exit_code: Annotated[int, Field(ge=1, le=254)] = Field(
        default=99,
        description="A batch job that exits with it is requeued (slurm.conf RequeueExit, cluster-wide).",
    )


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
    burst: Burst = Burst()
    spot: Spot = Spot()
    controller_access: ControllerAccess | None = Field(
        default=None, description="IAM Roles Anywhere for an on-prem controller's power programs."
    )
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
