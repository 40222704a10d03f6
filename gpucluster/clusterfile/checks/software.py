"""Rules on where pinned software comes from: a Slurm package source that can give the pin."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import rack_hosts

# SchedMD's release tarballs carry debian/ packaging (slurm-smd-*) since 23.11.
# https://slurm.schedmd.com/quickstart_admin.html#debuild
FIRST_DEBIAN_PACKAGED = (23, 11)
_RELEASE = re.compile(r"^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.[0-9]+$")


def _rack_host_names(cluster: Cluster) -> set[str]:
    """Every on-prem host Ansible converges: service hosts and rack nodes."""
    if cluster.onprem is None:
        return set()
    names = {host.name for host in cluster.onprem.service_hosts}
    for rack in cluster.onprem.racks:
        try:
            names |= {host.name for host in rack_hosts(rack)}
        except ValueError:  # a bad node_range pattern has its own finding
            names |= {host.name for host in rack.nodes}
    return names


def upstream_release_can_build(cluster: Cluster) -> Iterator[Finding]:
    """An upstream-release pin is a release with debian/ packaging, built on a rack host."""
    packages = cluster.slurm.packages
    if packages.source != "upstream-release" or packages.release is None:
        return
    pin = cluster.versions.slurm
    match = _RELEASE.match(pin)
    if match is None or (int(match["major"]), int(match["minor"])) < FIRST_DEBIAN_PACKAGED:
        yield Finding(
            ("slurm", "packages", "source"),
            f"versions.slurm {pin} cannot be built with source upstream-release: SchedMD's release tarballs"
            " carry debian/ packaging only from 23.11 on, as <major>.<minor>.<patch>",
            "pin a 23.11 or later release (e.g. 25.11.6), or use source: distribution or site-repository",
        )
    build_host = packages.release.build_host or cluster.slurm.controller
    named = packages.release.build_host is not None
    head_node = cluster.aws.head_node.name if cluster.aws and cluster.aws.head_node else None
    # The default build host is the controller: an undeclared one has its own finding, a cloud head node not.
    if (named or build_host == head_node) and build_host not in _rack_host_names(cluster):
        yield Finding(
            ("slurm", "packages", "release", "build_host") if named else ("slurm", "packages", "source"),
            f"the Slurm packages would be built on {build_host!r}, not an on-prem host Ansible converges",
            "set slurm.packages.release.build_host to an onprem.service_hosts entry or a rack node",
        )
