"""Pinned software versions and Slurm settings of a cluster."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, StringConstraints, model_validator

from gpucluster.clusterfile.model.common import HostName, Name, Strict, VersionPin

DriverBranch = Annotated[str, StringConstraints(pattern=r"^[0-9]{3}$")]
Url = Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# Where SchedMD publishes each release tarball (https://www.schedmd.com/download-slurm/).
SCHEDMD_DOWNLOAD_URL = "https://download.schedmd.com/slurm/slurm-{version}.tar.bz2"


class Versions(Strict):
    """Software versions, each pinned; cloud AMIs and rack roles install exactly these."""

    # Driver branch 580 is NVIDIA's long-lived production branch; CUDA 13.0 needs 580.65.06 or later.
    nvidia_driver_branch: DriverBranch = "580"
    nvidia_driver: VersionPin = "580.126.09"
    cuda: VersionPin = "13.0"
    nccl: VersionPin = "2.28.9-1"  # NVIDIA's repository builds it as 2.28.9-1+cuda13.0
    # No distribution ships a supported Slurm (Debian 12: 22.05, Ubuntu 24.04: 23.11): a pin this new comes
    # from slurm.packages source upstream-release or site-repository (docs/slurm-packages.md).
    slurm: VersionPin = "25.11.6"
    efa_installer: VersionPin = "1.51.0"
    aws_ofi_nccl: VersionPin = "1.22.0"
    dcgm: VersionPin = "4.4.2"
    nccl_tests: VersionPin = "2.13.11"


class SchedulingPlugins(Strict):
    """Slurm process tracking and task plugins; cgroup-based unless the site says otherwise."""

    proctrack: Literal["proctrack/cgroup", "proctrack/linuxproc"] = "proctrack/cgroup"
    task: Literal["task/cgroup,task/affinity", "task/affinity", "task/none"] = "task/cgroup,task/affinity"
    jobacct_gather: Literal["jobacct_gather/cgroup", "jobacct_gather/linux"] = "jobacct_gather/cgroup"
    select_parameters: Literal["CR_Core_Memory", "CR_Core", "CR_CPU_Memory"] = "CR_Core_Memory"


class Accounting(Strict):
    """Slurm accounting through slurmdbd backed by MariaDB."""

    enabled: bool = True
    host: HostName | None = None  # defaults to the controller
    tres: list[str] = Field(default_factory=lambda: ["gres/gpu"])


class Partition(Strict):
    """A Slurm partition over node groups (racks or AWS capacity groups)."""

    name: Name
    node_groups: Annotated[list[Name], Field(min_length=1)]
    default: bool = False
    max_time: Annotated[
        str,
        StringConstraints(
            pattern=r"^(INFINITE|[0-9]+(-[0-9]{1,2}(:[0-9]{2}){0,2})?|[0-9]{1,2}(:[0-9]{2}){1,2})$"
        ),
    ] = "INFINITE"
    # What a job that asks for GPUs but not for CPUs or memory gets per GPU (DefCpuPerGPU, DefMemPerGPU).
    # Unset: the node's CPUs and memory divided by its GPUs, on the smallest node group of the partition,
    # so a job without --mem takes its share of the node, not all of it.
    def_cpu_per_gpu: PositiveInt | None = None
    def_mem_per_gpu_mib: PositiveInt | None = None


class Account(Strict):
    """A job user with the same uid and gid on every node, rack or cloud."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]
    uid: Annotated[int, Field(ge=1000, le=59999)]
    gid: Annotated[int, Field(ge=1000, le=59999)] | None = None  # default: a group of its own, gid = uid

    @property
    def group_id(self) -> int:
        """The primary group id."""
        return self.gid if self.gid is not None else self.uid


class Users(Strict):
    """Where job users come from, so a job's user resolves alike on every node it runs on."""

    # local: the accounts below, created on racks by slurm_common and on cloud nodes at boot.
    # directory: the site's directory service (SSSD/LDAP) already serves racks and the node image.
    source: Literal["local", "directory"] = "local"
    accounts: list[Account] = Field(default_factory=list)

    @model_validator(mode="after")
    def _accounts_only_local(self) -> Users:
        if self.source == "directory" and self.accounts:
            raise ValueError("accounts are for source: local; a directory service defines its own users")
        return self


class UpstreamRelease(Strict):
    """Slurm built from its release tarball with SchedMD's own debian/ packaging (23.11 and later)."""

    # Default: SchedMD's download URL for versions.slurm; a mirror or GitHub's tag archive also works.
    tarball_url: Url | None = None
    sha256: Sha256  # of the tarball; required, so a changed or truncated download is refused
    # The rack host that builds the packages (it gets the build tools); default: the Slurm controller.
    build_host: HostName | None = None

    def url_for(self, version: str) -> str:
        """The tarball's URL: the one given, or SchedMD's for `version`."""
        return self.tarball_url or SCHEDMD_DOWNLOAD_URL.format(version=version)


class SlurmPackages(Strict):
    """Where the Slurm packages come from; the roles refuse a source that does not offer the pin."""

    # distribution: the OS's own packages (Debian 12: 22.05.8). site-repository: the site's repository of
    # packages built with SchedMD's packaging. upstream-release: built here from the release tarball
    # (`release`), published as a flat apt repository on every node. docs/slurm-packages.md.
    source: Literal["distribution", "site-repository", "upstream-release"] = "distribution"
    repository: Url | None = None  # apt: a flat repository (deb822 suite "/"); dnf: the baseurl
    signing_key: Url | None = None  # the repository's public key (apt Signed-By, dnf gpgkey)
    release: UpstreamRelease | None = None  # source upstream-release only

    @model_validator(mode="after")
    def _source_named(self) -> SlurmPackages:
        if self.source == "site-repository" and not (self.repository and self.signing_key):
            raise ValueError(
                "source site-repository needs `repository` and `signing_key` (URLs of your Slurm package"
                " repository and its key); or use source: distribution"
            )
        if self.source == "upstream-release" and self.release is None:
            raise ValueError(
                "source upstream-release needs `release` with the tarball's `sha256` (and optionally"
                " `tarball_url`, `build_host`); or use source: site-repository"
            )
        if self.source != "upstream-release" and self.release is not None:
            raise ValueError(
                f"`release` is for source upstream-release, not {self.source}; remove it or change source"
            )
        return self


class Slurm(Strict):
    """Where the controller runs, the partitions and the scheduling plugins."""

    controller: HostName
    accounting: Accounting = Accounting()
    partitions: Annotated[list[Partition], Field(min_length=1)]
    plugins: SchedulingPlugins = SchedulingPlugins()
    packages: SlurmPackages = SlurmPackages()
    slurmctld_port: Annotated[int, Field(ge=1024, le=65535)] = 6817
    slurmd_port: Annotated[int, Field(ge=1024, le=65535)] = 6818
    users: Users = Users()
    # SlurmdParameters: config_overrides registers nodes smaller than their declared hardware (bring-up
    # and test racks only: a production node with less than declared should drain).
    slurmd_parameters: list[Literal["config_overrides", "shutdown_on_reboot", "l3cache_as_socket"]] = Field(
        default_factory=list
    )
    # AuthInfo=cred_expire: a job step credential's lifetime, which is also how long Slurm holds a
    # requeued job before it may start again (a spot-requeued job waits this long).
    credential_lifetime_s: Annotated[int, Field(ge=5, le=3600)] = 120
    # One job stays inside one fabric (InfiniBand racks, EFA groups): topology.conf joins no two fabrics
    # under one switch, so Slurm never allocates one job across them. True joins them under a root.
    allow_fabric_spanning: bool = False
