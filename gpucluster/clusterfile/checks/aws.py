"""Rules about the AWS side: region, instance types, markets, placement and EFA layout."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES, REGION_AZS
from gpucluster.clusterfile.efa_layout import layout_problems
from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.model import Cluster

_CAP = ("aws", "capacity")


def availability_zone_in_region(cluster: Cluster) -> Iterator[Finding]:
    """The availability zone must belong to the region (and the region must be known)."""
    if not cluster.aws:
        return
    zones = REGION_AZS.get(cluster.aws.region)
    if zones is None:
        yield Finding(
            ("aws", "region"),
            f"region {cluster.aws.region!r} has no catalog entry",
            f"use one of {', '.join(REGION_AZS)}",
        )
    elif cluster.aws.availability_zone not in zones:
        yield Finding(
            ("aws", "availability_zone"),
            f"{cluster.aws.availability_zone!r} is not in {cluster.aws.region}",
            f"use one of {', '.join(zones)}",
        )


def instance_types_known(cluster: Cluster) -> Iterator[Finding]:
    """Every instance type must be a catalog GPU type; EFA groups need an EFA-capable type."""
    if not cluster.aws:
        return
    known = ", ".join(INSTANCE_TYPES)
    for index, group in enumerate(cluster.aws.capacity):
        itype = INSTANCE_TYPES.get(group.instance_type)
        if itype is None:
            yield Finding(
                (*_CAP, index, "instance_type"),
                f"unknown instance type {group.instance_type!r}",
                f"use one of {known}",
            )
        elif group.efa and itype.max_efa_interfaces == 0:
            yield Finding(
                (*_CAP, index, "efa"),
                f"{group.instance_type} does not support EFA",
                "set efa: false or pick an EFA instance type",
            )
        for f_index, name in enumerate(group.fallback_instance_types):
            if name not in INSTANCE_TYPES:
                yield Finding(
                    (*_CAP, index, "fallback_instance_types", f_index),
                    f"unknown instance type {name!r}",
                    f"use one of {known}",
                )


def fallback_types_match(cluster: Cluster) -> Iterator[Finding]:
    """Fallback types must carry the same GPU count; capacity blocks take exactly one type."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        primary = INSTANCE_TYPES.get(group.instance_type)
        if group.fallback_instance_types and group.market == "capacity-block":
            yield Finding(
                (*_CAP, index, "fallback_instance_types"),
                "a capacity block reserves one instance type",
                "remove fallback_instance_types from this group",
            )
        for f_index, name in enumerate(group.fallback_instance_types):
            other = INSTANCE_TYPES.get(name)
            if primary and other and other.gpu_count != primary.gpu_count:
                yield Finding(
                    (*_CAP, index, "fallback_instance_types", f_index),
                    f"{name} has {other.gpu_count} GPUs, {primary.name} has {primary.gpu_count}",
                    "fallbacks must match Slurm's node line",
                )


def min_count_not_above_max(cluster: Cluster) -> Iterator[Finding]:
    """min_count must not exceed max_count."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        if group.min_count > group.max_count:
            yield Finding(
                (*_CAP, index, "max_count"),
                f"must be ≥ min_count ({group.min_count})",
                "raise max_count or lower min_count",
            )


def efa_needs_cluster_placement_group(cluster: Cluster) -> Iterator[Finding]:
    """EFA groups need a cluster placement group, except capacity blocks (which bring their own)."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        if group.efa and group.market != "capacity-block" and group.placement_group is False:
            yield Finding(
                (*_CAP, index, "placement_group"),
                "an EFA group needs a cluster placement group for full bandwidth",
                "remove `placement_group: false` or set efa: false",
            )


def capacity_block_without_placement_group(cluster: Cluster) -> Iterator[Finding]:
    """Capacity blocks are already co-located; AWS rejects a placement group on them."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        if group.market == "capacity-block" and group.placement_group:
            yield Finding(
                (*_CAP, index, "placement_group"),
                "capacity blocks must not use a placement group",
                "remove `placement_group: true` from this capacity-block group",
            )


def reservation_fits_market(cluster: Cluster) -> Iterator[Finding]:
    """Capacity blocks need their reservation id; spot cannot use one."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        path = (*_CAP, index, "capacity_reservation_id")
        if group.market == "capacity-block" and group.capacity_reservation_id is None:
            yield Finding(
                path,
                "a capacity-block group needs its reservation id",
                "copy the cr-… id of the purchased capacity block",
            )
        if group.market == "spot" and group.capacity_reservation_id is not None:
            yield Finding(
                path,
                "spot capacity cannot target a capacity reservation",
                "remove the id or use market: on-demand",
            )


def efa_interfaces_cover_every_card(cluster: Cluster) -> Iterator[Finding]:
    """An explicit EFA layout must put one EFA interface on every network card, as AWS documents."""
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        itype = INSTANCE_TYPES.get(group.instance_type)
        if group.efa_interfaces is None or itype is None or not group.efa:
            continue
        for problem in layout_problems(group.efa_interfaces, itype):
            yield Finding(
                (*_CAP, index, "efa_interfaces"),
                problem,
                "one EFA interface per network card: card 0 device 0 (or 1 with an ENA "
                "primary), cards 1… device 1; or drop efa_interfaces to use efa_layout",
            )


def head_node_inside_vpc(cluster: Cluster) -> Iterator[Finding]:
    """A cloud head node's fixed address must be a usable address of the GPU subnet.

    The GPU subnet is the lower half of aws.vpc_cidr (stacks/parts/network.py); AWS reserves the
    first four and the last address of every subnet:
    https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
    """
    if not cluster.aws or not cluster.aws.head_node:
        return
    address = cluster.aws.head_node.address
    subnet = next(cluster.aws.vpc_cidr.subnets(prefixlen_diff=1))
    usable = address in subnet and 4 <= int(address) - int(subnet.network_address) < subnet.num_addresses - 1
    if not usable:
        yield Finding(
            ("aws", "head_node", "address"),
            f"{address} is not a usable address of the GPU subnet {subnet}",
            f"use an address inside {subnet} past its first four (the lower half of aws.vpc_cidr)",
        )


def onprem_cidrs_do_not_overlap_vpc(cluster: Cluster) -> Iterator[Finding]:
    """On-prem networks routed to the VPC must not overlap it, or routes become ambiguous."""
    if not cluster.aws:
        return
    for index, cidr in enumerate(cluster.aws.onprem_cidrs):
        if cidr.overlaps(cluster.aws.vpc_cidr):
            yield Finding(
                ("aws", "onprem_cidrs", index),
                f"{cidr} overlaps the VPC {cluster.aws.vpc_cidr}",
                "pick a VPC CIDR that does not collide with on-prem networks",
            )
    counts = Counter(cluster.aws.onprem_cidrs)
    for index, cidr in enumerate(cluster.aws.onprem_cidrs):
        if counts[cidr] > 1:
            yield Finding(("aws", "onprem_cidrs", index), f"{cidr} is listed twice", "list it once")
            counts[cidr] = 1


def spot_has_checkpoint_bucket(cluster: Cluster) -> Iterator[Finding]:
    """Spot without a checkpoint bucket loses work at every 2-minute interruption (a warning)."""
    if not cluster.aws or cluster.aws.checkpoint is not None:
        return
    for index, group in enumerate(cluster.aws.capacity):
        if group.market == "spot":
            yield Finding(
                (*_CAP, index, "market"),
                "spot capacity without a checkpoint bucket",
                "declare aws.checkpoint so jobs can checkpoint within the 2-minute notice",
                level="warning",
            )


def one_image_source(cluster: Cluster) -> Iterator[Finding]:
    """Cloud nodes launch either the image the image stack builds or an explicit AMI, not both."""
    if cluster.aws and cluster.aws.image is not None and cluster.aws.ami_id is not None:
        yield Finding(
            ("aws", "ami_id"),
            "aws.ami_id and aws.image are mutually exclusive",
            "remove aws.image to launch this AMI, or remove aws.ami_id to build the node image",
        )


def image_fits_root_volumes(cluster: Cluster) -> Iterator[Finding]:
    """A launch template's root volume cannot be smaller than the image's snapshot."""
    if not cluster.aws or not cluster.aws.builds_image:
        return
    image_gib = cluster.aws.node_image.root_volume_gib
    smallest = min((g.root_volume_gib for g in cluster.aws.capacity), default=image_gib)
    if image_gib > smallest:
        yield Finding(
            ("aws", "image", "root_volume_gib"),
            f"{image_gib} GiB is larger than a capacity group's root volume ({smallest} GiB)",
            f"lower it to at most {smallest} or raise that group's root_volume_gib",
        )


def onprem_controller_is_reachable(cluster: Cluster) -> Iterator[Finding]:
    """Cloud nodes of a cluster whose controller sits on-prem need a declared network path to it."""
    aws = cluster.aws
    if not aws or not aws.capacity or cluster.onprem is None:
        return
    controller = cluster.slurm.controller
    if aws.head_node is not None and aws.head_node.name == controller:
        return
    if aws.vpn is None and aws.transit_gateway_id is None:
        yield Finding(
            ("aws", "vpn"),
            f"cloud nodes must reach the on-prem controller {controller} (slurmctld, and it must reach "
            "their slurmd), but the file declares no network path from the VPC",
            "add aws.vpn: {customer_gateway_address: <your gateway's public IP>} (site-to-site VPN) or "
            "aws.transit_gateway_id: tgw-… (a transit gateway; Direct Connect reaches the VPC through one)",
        )
    if aws.controller_access is None:
        yield Finding(
            ("aws", "controller_access"),
            f"the on-prem controller {controller} launches and terminates cloud nodes, but the file "
            "declares no way for it to get AWS credentials",
            "add aws.controller_access: {acm_pca_arn: arn:aws:acm-pca:…} (or ca_certificate: a PEM): IAM "
            "Roles Anywhere trusts that CA for a certificate whose CN is the controller's name",
        )
    if not aws.onprem_cidrs:
        yield Finding(
            ("aws", "onprem_cidrs"),
            f"the on-prem networks of {controller} and the racks are not listed, so no route or "
            "security group rule can admit them",
            "list them, e.g. onprem_cidrs: [10.10.0.0/16]",
        )
