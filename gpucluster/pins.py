"""Where each pinned version comes from on each site, and which role variable carries it to the installer.

`gpucluster show` prints this table; the inventory (gpucluster.ansible_vars) sets the variables, and a
test proves that every pin in `versions` reaches a role that installs it, so a new pin cannot be
printed without being enforced.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.clusterfile.model import Cluster

NVIDIA_REPOSITORY = "NVIDIA's CUDA repository"
NODE_IMAGE = "the node image (built by the image stack)"


@dataclass(frozen=True, kw_only=True)
class PinSource:
    """One pinned version: the role variable that carries it and where each site's nodes get it."""

    pin: str  # the field of `versions`
    version: str
    variable: str  # the role variable the inventory sets to the pin
    onprem: str | None  # where rack nodes get it; None: racks do not use it
    aws: str  # where cloud nodes get it


def pin_sources(cluster: Cluster) -> list[PinSource]:
    """Every pin of the cluster file with its variable and its source per site."""
    v = cluster.versions
    mirror = cluster.onprem.package_mirror if cluster.onprem else None
    nvidia = f"{NVIDIA_REPOSITORY} mirrored at {mirror}" if mirror else NVIDIA_REPOSITORY
    slurm = slurm_source(cluster)

    def pin(name: str, variable: str, onprem: str | None, aws: str = NODE_IMAGE) -> PinSource:
        return PinSource(pin=name, version=str(getattr(v, name)), variable=variable, onprem=onprem, aws=aws)

    return [
        pin("slurm", "slurm_common_slurm_version", slurm),
        pin("nvidia_driver_branch", "gpu_nvidia_driver_branch", nvidia),
        pin("nvidia_driver", "gpu_nvidia_driver_version", nvidia),
        pin("cuda", "gpu_cuda_toolkit_version", nvidia),
        pin("nccl", "gpu_nccl_version", nvidia),
        pin("dcgm", "gpu_dcgm_version", nvidia),
        pin("nccl_tests", "gpu_nccl_tests_version", "built from the NVIDIA/nccl-tests release tag"),
        # EFA exists only in AWS: racks use InfiniBand (net_infiniband).
        pin("efa_installer", "net_efa_installer_version", None),
        pin("aws_ofi_nccl", "net_efa_aws_ofi_nccl_version", None),
    ]


def slurm_source(cluster: Cluster) -> str:
    """Where rack nodes get Slurm, in words: the distribution, the site's repository or a build here."""
    packages = cluster.slurm.packages
    if packages.source == "site-repository":
        return f"the site repository {packages.repository}"
    if packages.release is not None:
        release = packages.release
        build_host = release.build_host or cluster.slurm.controller
        return (
            f"built on {build_host} from {release.url_for(cluster.versions.slurm)}"
            f" (sha256 {release.sha256[:12]}…) with SchedMD's debian/ packaging"
        )
    return "the OS distribution's packages"


def pin_lines(cluster: Cluster) -> list[str]:
    """`show`'s lines: each pin, its version and where each site's nodes get it."""
    lines = ["Pins (where each version comes from):"]
    sites = [("on-prem", cluster.onprem is not None), ("AWS", cluster.aws is not None)]
    for source in pin_sources(cluster):
        where = [
            f"{site}: {source.onprem if site == 'on-prem' else source.aws}"
            for site, present in sites
            if present and (site == "AWS" or source.onprem is not None)
        ]
        lines.append(f"  {source.pin:<21} {source.version:<12} {'; '.join(where) or 'not used by any site'}")
    return lines
