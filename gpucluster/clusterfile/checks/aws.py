"""Rules about the AWS side: region, instance types, markets, placement and EFA layout."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpucluster.clusterfile.catalog.hardware import GPU_MODELS, INSTANCE_TYPES, REGION_AZS
from gpucluster.clusterfile.efa_layout import group_layout_problems
from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.clusterfile.nodes import node_line_differences
from gpucluster.clusterfile.vpc_layout import gpu_subnet, usable_range, vpc_problems

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
    """A group's Slurm node line must be true for every type it may launch; capacity blocks take one type.

    Fallbacks must match the primary's GPU model, GPU memory, GPU count, CPUs and memory, unless the
    group declares `mixed_gpus: true`: each GPU model then gets its own Slurm names and line (its GRES
    type and feature), and only the model may differ.
    """
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        if group.fallback_instance_types and group.market == "capacity-block":
            yield Finding(
                (*_CAP, index, "fallback_instance_types"),
                "a capacity block reserves one instance type",
                "remove fallback_instance_types from this group",
            )
        yield from _fallback_differences(index, group)
        yield from _needless_mix(index, group)


def _fallback_differences(index: int, group: CapacityGroup) -> Iterator[Finding]:
    primary = INSTANCE_TYPES.get(group.instance_type)
    for f_index, name in enumerate(group.fallback_instance_types):
        other = INSTANCE_TYPES.get(name)
        if primary is None or other is None:
            continue  # unknown types: instance_types_known says so
        differences = node_line_differences(primary, other, gpu_model=not group.mixed_gpus)
        if not differences:
            continue
        gres = f"gpu:{GPU_MODELS[primary.gpu].slurm_type}:{primary.gpu_count}"
        mix = (
            ""
            if group.mixed_gpus or primary.gpu_count != other.gpu_count
            else (", or declare `mixed_gpus: true` (each GPU model then gets its own Slurm names and line)")
        )
        yield Finding(
            (*_CAP, index, "fallback_instance_types", f_index),
            f"{name} has {'; '.join(differences)}, so the group's Slurm line (from {primary.name}: "
            f"{gres}) is false for it and jobs asking for {primary.name}'s hardware could land on it",
            f"use a fallback with the same hardware, or give {name} its own capacity group{mix}",
        )


def _needless_mix(index: int, group: CapacityGroup) -> Iterator[Finding]:
    types = [INSTANCE_TYPES.get(t) for t in (group.instance_type, *group.fallback_instance_types)]
    models = {t.gpu for t in types if t is not None}
    if group.mixed_gpus and len(models) == 1:
        yield Finding(
            (*_CAP, index, "mixed_gpus"),
            "every instance type of this group has the same GPU model",
            "remove mixed_gpus: it only matters where the GPU models differ",
            level="warning",
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


def efa_layout_fits_every_type(cluster: Cluster) -> Iterator[Finding]:
    """The launch template's EFA layout fits every instance type the group may launch.

    One EFA interface on every network card, as AWS documents; synth's GpuCluster-EfaLayout rule
    applies the same `layout_problems` to the synthesized launch template.
    """
    if not cluster.aws:
        return
    for index, group in enumerate(cluster.aws.capacity):
        for name, problems in group_layout_problems(group).items():
            if name == group.instance_type:
                yield from (
                    Finding(
                        (*_CAP, index, "efa_interfaces"),
                        problem,
                        "one EFA interface per network card: card 0 device 0 (or 1 with an ENA "
                        "primary), cards 1… device 1; or drop efa_interfaces to use efa_layout",
                    )
                    for problem in problems
                )
                continue
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            yield Finding(
                (*_CAP, index, "fallback_instance_types", group.fallback_instance_types.index(name)),
                f"the launch template is laid out for {group.instance_type} "
                f"({INSTANCE_TYPES[group.instance_type].network_cards} network cards): {problems[0]}{more}",
                f"one launch template serves every type of a group: use fallbacks with the same network "
                f"cards, or give {name} its own capacity group",
            )


def head_node_inside_vpc(cluster: Cluster) -> Iterator[Finding]:
    """A cloud head node's fixed address must be a usable address of the GPU subnet.

    The same range the head node construct checks at synth (gpucluster.clusterfile.vpc_layout).
    """
    if not cluster.aws or not cluster.aws.head_node:
        return
    if vpc_problems(cluster.aws.vpc_cidr, egress=False, image_build=False):
        return  # vpc_fits_its_subnets reports the VPC itself
    address = cluster.aws.head_node.address
    subnet = gpu_subnet(cluster.aws.vpc_cidr)
    first, last = usable_range(subnet)
    if not first <= address <= last:
        yield Finding(
            ("aws", "head_node", "address"),
            f"{address} is not a usable address of the GPU subnet {subnet}",
            f"use an address from {first} to {last} (the lower half of aws.vpc_cidr past its first four)",
        )


def vpc_fits_its_subnets(cluster: Cluster) -> Iterator[Finding]:
    """The VPC must be an allowed size with room for the GPU subnet and the small subnets beside it."""
    if not cluster.aws:
        return
    aws = cluster.aws
    for problem in vpc_problems(aws.vpc_cidr, egress=aws.egress, image_build=aws.builds_image):
        yield Finding(
            ("aws", "vpc_cidr"),
            problem,
            "use a larger VPC, e.g. a /16 to /24 (the GPU subnet is its lower half)",
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
