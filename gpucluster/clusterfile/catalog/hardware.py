"""Reference figures for instance types, GPU models and fabrics; each figure carries its source and date.

The catalog is data, not policy: validators use it to check a cluster file, the renderer to size
Slurm node lines, the stacks to lay out EFA interfaces and (later) the cost model for prices.
Prices are reference list prices; a cluster file's economics section may override them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where a figure came from and when it was read."""

    url: str
    date: str  # ISO date the figure was read or published


@dataclass(frozen=True, kw_only=True)
class GpuModel:
    """A GPU model as Slurm and the acceptance checks see it."""

    key: str
    name: str  # as nvidia-smi reports it
    slurm_type: str  # GRES type name in gres.conf / slurm.conf
    memory_gib: int
    nvlink_gbytes_s: int  # total NVLink bandwidth per GPU, GB/s
    source: Source


@dataclass(frozen=True, kw_only=True)
class Fabric:
    """A node-to-node fabric with its per-node line rate."""

    key: str
    name: str
    kind: str  # "efa" | "infiniband"
    per_port_gbps: int
    source: Source


@dataclass(frozen=True, kw_only=True)
class InstanceType:
    """An EC2 GPU instance type with the figures our stacks and Slurm node lines need."""

    name: str
    gpu: str  # GpuModel key
    gpu_count: int
    vcpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_gib: int
    network_cards: int
    max_efa_interfaces: int
    fabric: str  # Fabric key
    efa_gbps: int
    on_demand_usd_per_hour: float  # us-east-1, Linux
    price_source: Source
    spec_source: Source

    @property
    def gpu_memory_gib(self) -> int:
        """Total GPU memory of the instance."""
        return self.gpu_count * GPU_MODELS[self.gpu].memory_gib


_EC2_ACCEL: Final = Source(url="https://aws.amazon.com/ec2/instance-types/p5/", date="2026-11-30")
_EC2_P4: Final = Source(url="https://aws.amazon.com/ec2/instance-types/p4/", date="2026-11-30")
_EFA_CARDS: Final = Source(
    url="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html", date="2026-11-30"
)
_PRICE_CUT_2025: Final = Source(
    url="https://aws.amazon.com/about-aws/whats-new/2025/06/pricing-usage-model-ec2-instances-nvidia-gpus/",
    date="2025-06-05",
)

GPU_MODELS: Final[dict[str, GpuModel]] = {
    "h100-sxm": GpuModel(
        key="h100-sxm",
        name="NVIDIA H100 80GB HBM3",
        slurm_type="h100",
        memory_gib=80,
        nvlink_gbytes_s=900,
        source=Source(url="https://www.nvidia.com/en-us/data-center/h100/", date="2026-11-30"),
    ),
    "h200": GpuModel(
        key="h200",
        name="NVIDIA H200",
        slurm_type="h200",
        memory_gib=141,
        nvlink_gbytes_s=900,
        source=Source(url="https://www.nvidia.com/en-us/data-center/h200/", date="2026-11-30"),
    ),
    "a100-40gb": GpuModel(
        key="a100-40gb",
        name="NVIDIA A100-SXM4-40GB",
        slurm_type="a100",
        memory_gib=40,
        nvlink_gbytes_s=600,
        source=Source(url="https://www.nvidia.com/en-us/data-center/a100/", date="2026-11-30"),
    ),
    "a100-80gb": GpuModel(
        key="a100-80gb",
        name="NVIDIA A100-SXM4-80GB",
        slurm_type="a100",
        memory_gib=80,
        nvlink_gbytes_s=600,
        source=Source(url="https://www.nvidia.com/en-us/data-center/a100/", date="2026-11-30"),
    ),
}

FABRICS: Final[dict[str, Fabric]] = {
    "efa-v2": Fabric(
        key="efa-v2",
        name="Elastic Fabric Adapter v2 (3200 Gbps per p5 instance)",
        kind="efa",
        per_port_gbps=100,
        source=_EFA_CARDS,
    ),
    "efa-v3": Fabric(
        key="efa-v3",
        name="Elastic Fabric Adapter v3 (3200 Gbps per p5en instance)",
        kind="efa",
        per_port_gbps=200,
        source=_EFA_CARDS,
    ),
    "efa-v1": Fabric(
        key="efa-v1",
        name="Elastic Fabric Adapter (400 Gbps per p4d)",
        kind="efa",
        per_port_gbps=100,
        source=_EFA_CARDS,
    ),
    "ib-ndr400": Fabric(
        key="ib-ndr400",
        name="InfiniBand NDR 400 Gb/s",
        kind="infiniband",
        per_port_gbps=400,
        source=Source(url="https://www.nvidia.com/en-us/networking/quantum2/", date="2026-11-30"),
    ),
    "ib-hdr200": Fabric(
        key="ib-hdr200",
        name="InfiniBand HDR 200 Gb/s",
        kind="infiniband",
        per_port_gbps=200,
        source=Source(url="https://www.nvidia.com/en-us/networking/infiniband-switching/", date="2026-11-30"),
    ),
}

INSTANCE_TYPES: Final[dict[str, InstanceType]] = {
    "p5.48xlarge": InstanceType(
        name="p5.48xlarge",
        gpu="h100-sxm",
        gpu_count=8,
        vcpus=192,
        sockets=2,
        cores_per_socket=48,
        threads_per_core=2,
        memory_gib=2048,
        network_cards=32,
        max_efa_interfaces=32,
        fabric="efa-v2",
        efa_gbps=3200,
        on_demand_usd_per_hour=55.04,
        price_source=_PRICE_CUT_2025,
        spec_source=_EC2_ACCEL,
    ),
    "p5e.48xlarge": InstanceType(
        name="p5e.48xlarge",
        gpu="h200",
        gpu_count=8,
        vcpus=192,
        sockets=2,
        cores_per_socket=48,
        threads_per_core=2,
        memory_gib=2048,
        network_cards=32,
        max_efa_interfaces=32,
        fabric="efa-v2",
        efa_gbps=3200,
        on_demand_usd_per_hour=63.44,
        price_source=_PRICE_CUT_2025,
        spec_source=_EC2_ACCEL,
    ),
    "p5en.48xlarge": InstanceType(
        name="p5en.48xlarge",
        gpu="h200",
        gpu_count=8,
        vcpus=192,
        sockets=2,
        cores_per_socket=48,
        threads_per_core=2,
        memory_gib=2048,
        network_cards=16,
        max_efa_interfaces=16,
        fabric="efa-v3",
        efa_gbps=3200,
        on_demand_usd_per_hour=63.30,
        price_source=_PRICE_CUT_2025,
        spec_source=_EC2_ACCEL,
    ),
    "p4d.24xlarge": InstanceType(
        name="p4d.24xlarge",
        gpu="a100-40gb",
        gpu_count=8,
        vcpus=96,
        sockets=2,
        cores_per_socket=24,
        threads_per_core=2,
        memory_gib=1152,
        network_cards=4,
        max_efa_interfaces=4,
        fabric="efa-v1",
        efa_gbps=400,
        on_demand_usd_per_hour=21.96,
        price_source=_PRICE_CUT_2025,
        spec_source=_EC2_P4,
    ),
    "p4de.24xlarge": InstanceType(
        name="p4de.24xlarge",
        gpu="a100-80gb",
        gpu_count=8,
        vcpus=96,
        sockets=2,
        cores_per_socket=24,
        threads_per_core=2,
        memory_gib=1152,
        network_cards=4,
        max_efa_interfaces=4,
        fabric="efa-v1",
        efa_gbps=400,
        on_demand_usd_per_hour=27.45,
        price_source=_PRICE_CUT_2025,
        spec_source=_EC2_P4,
    ),
}

# Availability zones per region that hold p5-class capacity; AZ names only (no AWS call at synth).
REGION_AZS: Final[dict[str, tuple[str, ...]]] = {
    "us-east-1": tuple(f"us-east-1{s}" for s in "abcdef"),
    "us-east-2": tuple(f"us-east-2{s}" for s in "abc"),
    "us-west-2": tuple(f"us-west-2{s}" for s in "abcd"),
    "eu-west-1": tuple(f"eu-west-1{s}" for s in "abc"),
    "eu-north-1": tuple(f"eu-north-1{s}" for s in "abc"),
    "ap-northeast-1": tuple(f"ap-northeast-1{s}" for s in "acd"),
    "ap-southeast-2": tuple(f"ap-southeast-2{s}" for s in "abc"),
}
