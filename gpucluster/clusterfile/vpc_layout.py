"""How the cluster VPC is cut into subnets; shared by the network construct and `validate`.

AWS allows VPCs and subnets from /16 to /28 and reserves the first four and the last address of
every subnet: https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
The GPU subnet takes the lower half of the VPC, so fixed addresses (a cloud head node) are
predictable; the NAT and image-build subnets are /28s allocated after it, in the upper half.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

MIN_PREFIX = 16  # largest VPC or subnet AWS allows
MAX_PREFIX = 28  # smallest VPC or subnet AWS allows
SMALL_SUBNET_PREFIX = 28  # the NAT and image-build subnets
RESERVED_HEAD = 4  # AWS reserves the network address and the next three
NAT_SUBNET = "nat"
IMAGE_BUILD_SUBNET = "image-build"


def gpu_subnet(vpc_cidr: IPv4Network) -> IPv4Network:
    """The GPU subnet: the lower half of the VPC."""
    return next(vpc_cidr.subnets(prefixlen_diff=1))


def usable_range(subnet: IPv4Network) -> tuple[IPv4Address, IPv4Address]:
    """First and last address of a subnet that AWS lets an instance use."""
    return subnet.network_address + RESERVED_HEAD, subnet.broadcast_address - 1


def small_subnets(*, egress: bool, image_build: bool) -> list[str]:
    """Names of the /28 subnets besides the GPU subnet.

    A NAT subnet for egress or for an image build, and the image build's own private subnet when
    the GPU subnet stays closed (no egress).
    """
    names = [NAT_SUBNET] if egress or image_build else []
    return names + ([IMAGE_BUILD_SUBNET] if image_build and not egress else [])


def vpc_problems(vpc_cidr: IPv4Network, *, egress: bool, image_build: bool) -> list[str]:
    """Why the VPC cannot be cut as above; empty when it can."""
    if not MIN_PREFIX <= vpc_cidr.prefixlen <= MAX_PREFIX - 1:
        return [
            f"{vpc_cidr} is a /{vpc_cidr.prefixlen}; the VPC must be /{MIN_PREFIX} to /{MAX_PREFIX - 1} "
            f"(its lower half, the GPU subnet, must be at least a /{MAX_PREFIX})"
        ]
    small = small_subnets(egress=egress, image_build=image_build)
    room = 2 ** (SMALL_SUBNET_PREFIX - vpc_cidr.prefixlen - 1)  # /28s in the upper half
    if len(small) > room:
        return [
            f"{vpc_cidr} has room for {room} /{SMALL_SUBNET_PREFIX} subnet(s) beside the GPU subnet, "
            f"but needs {len(small)} ({', '.join(small)})"
        ]
    return []
