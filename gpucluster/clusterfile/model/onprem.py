"""On-premises part of the cluster file: hardware profiles, service hosts and racks of GPU nodes."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import Field, PositiveInt, StringConstraints

from gpucluster.clusterfile.model.common import HostName, Name, Strict

HostPattern = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*(\[[0-9]+-[0-9]+\])?[a-z0-9-]*$")]


class Gpus(Strict):
    """The GPUs of a hardware profile."""

    model: str  # GPU_MODELS key, checked by a validator
    count: Annotated[int, Field(ge=0, le=16)] = 8


class Hcas(Strict):
    """InfiniBand host channel adapters of a hardware profile."""

    count: Annotated[int, Field(ge=0, le=16)] = 8
    fabric: Literal["ib-ndr400", "ib-hdr200"] = "ib-ndr400"
    device_prefix: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9]*$")] = "mlx5"
    stack: Literal["rdma-core", "doca-ofed"] = "rdma-core"
    gpudirect_rdma: bool = True  # load nvidia-peermem so NCCL can DMA between GPUs and HCAs
    ipoib: bool = False  # configure IPoIB addresses from the hosts' ipoib_address


class Acceptance(Strict):
    """What a node of the profile must prove before Slurm takes jobs on it; unset = catalog default."""

    dcgm_level: Annotated[int, Field(ge=1, le=4)] = 2
    nccl_test_size: Annotated[str, StringConstraints(pattern=r"^[0-9]+[KMG]$")] = "1G"
    min_single_node_busbw_gbs: Annotated[float, Field(gt=0)] | None = None
    min_multi_node_busbw_gbs: Annotated[float, Field(gt=0)] | None = None
    # Corrected ECC errors are normal on healthy GPUs (the memory corrected them); a GPU whose
    # lifetime (aggregate) count is above this fails. Uncorrectable ones and row-remap trouble always fail.
    max_corrected_ecc_errors: Annotated[int, Field(ge=0)] = 1000


class Cpus(Strict):
    """CPU topology as Slurm's node line wants it."""

    sockets: PositiveInt = 2
    cores_per_socket: PositiveInt = 56
    threads_per_core: Annotated[int, Field(ge=1, le=2)] = 2


class HardwareProfile(Strict):
    """What every node of a profile must have; acceptance checks compare hosts against it."""

    gpus: Gpus
    nvswitch: bool = True
    hcas: Hcas = Hcas()
    cpus: Cpus = Cpus()
    memory_gib: PositiveInt = 2048
    power_kw: Annotated[float, Field(gt=0, le=50)] = 10.2  # DGX H100 max system power
    # full: driver, kernel modules, fabric manager, services. userspace: libraries and tools only,
    # for nodes without the hardware (the test rack), which then fail acceptance clearly.
    install_mode: Literal["full", "userspace"] = "full"
    acceptance: Acceptance = Acceptance()


class Host(Strict):
    """One machine: a name and its management address."""

    name: HostName
    address: IPv4Address
    ipoib_address: IPv4Address | None = None


class NodeRange(Strict):
    """Consecutive nodes named by a Slurm hostlist pattern, addresses counting up from the first."""

    pattern: HostPattern  # e.g. gpu-a[01-04]
    first_address: IPv4Address
    first_ipoib_address: IPv4Address | None = None


class Rack(Strict):
    """A rack of GPU nodes of one hardware profile: a Slurm node group and a topology switch."""

    name: Name
    profile: Name
    nodes: list[Host] = Field(default_factory=list)
    node_range: NodeRange | None = None


class ServiceHost(Host):
    """A non-GPU host: Slurm controller, accounting database, login node."""

    roles: list[Literal["controller", "accounting", "login"]] = Field(default_factory=list)


class Reboots(Strict):
    """How many rack nodes a driver or kernel change may take out of service at once."""

    max_nodes: PositiveInt = 2  # in the whole cluster
    # of one rack, rounded down but at least one node: a rack of 4 at 25 % reboots one node at a time
    max_rack_percent: Annotated[int, Field(ge=1, le=100)] = 25
    # A node not back (registered again) this long after slurmd ran RebootProgram goes DOWN: servers with
    # large memory and many devices take minutes in firmware.
    timeout_s: Annotated[int, Field(ge=60, le=7200)] = 900


class OnPrem(Strict):
    """Racks in our own server rooms."""

    management_cidr: IPv4Network
    ipoib_cidr: IPv4Network | None = None
    subnet_manager: HostName | None = None  # host that runs opensm; None when the switches run one
    package_mirror: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")] | None = None
    # NTP servers every rack host's chrony uses (munge needs clocks in sync); empty: the OS's defaults.
    time_servers: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9.:-]+$")]] = Field(
        default_factory=list
    )
    reboots: Reboots = Reboots()
    profiles: dict[Name, HardwareProfile] = Field(default_factory=dict)
    service_hosts: list[ServiceHost] = Field(default_factory=list)
    racks: list[Rack] = Field(default_factory=list)
