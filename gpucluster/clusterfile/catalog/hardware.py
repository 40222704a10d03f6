"""Reference figures for instance types, GPU models and fabrics; each figure carries its source and date.

The catalog is data, not policy: validators use it to check a cluster file, the renderer to size
Slurm node lines, the stacks to lay out EFA interfaces and (later) the cost model for prices.
Prices are reference list prices; a cluster file's economics section may override them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Source:
    """Where a figure came from and when it was read."""

    url: str
    date: str  # ISO date the figure was read or published


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as Slurm and the acceptance checks see it."""

    key: str
    name: str  # as nvidia-smi reports it
    slurm_type: str  # GRES type name in gres.conf / slurm.conf
    memory_gib: int
    nvlink_gbytes_s: int  # total NVLink bandwidth per GPU, GB/s
    source: Source


@dataclass(frozen=True)
class Fabric:
    """A node-to-node fabric with its per-node line rate."""

    key: str
    name: str
    kind: str  # "efa" | "infiniband"
    per_port_gbps: int
    source: Source


@dataclass(frozen=True)
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


_EC2_ACCEL: Final = Source("https://aws.amazon.com/ec2/instance-types/p5/", "2026-11-30")
_EC2_P4: Final = Source("https://aws.amazon.com/ec2/instance-types/p4/", "2026-11-30")
_EFA_CARDS: Final = Source(
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html", "2026-11-30"
)
_PRICE_CUT_2025: Final = Source(
    "https://aws.amazon.com/about-aws/whats-new/2025/06/pricing-usage-model-ec2-instances-nvidia-gpus/",
    "2025-06-05",
)

GPU_MODELS: Final[dict[str, GpuModel]] = {
    "h100-sxm": GpuModel(
        "h100-sxm",
        "NVIDIA H100 80GB HBM3",
        "h100",
        80,
        900,
        Source("https://www.nvidia.com/en-us/data-center/h100/", "2026-11-30"),
    ),
    "h200": GpuModel(
        "h200",
        "NVIDIA H200",
        "h200",
        141,
        900,
        Source("https://www.nvidia.com/en-us/data-center/h200/", "2026-11-30"),
    ),
    "a100-40gb": GpuModel(
        "a100-40gb",
        "NVIDIA A100-SXM4-40GB",
        "a100",
        40,
        600,
        Source("https://www.nvidia.com/en-us/data-center/a100/", "2026-11-30"),
    ),
    "a100-80gb": GpuModel(
        "a100-80gb",
        "NVIDIA A100-SXM4-80GB",
        "a100",
        80,
        600,
        Source("https://www.nvidia.com/en-us/data-center/a100/", "2026-11-30"),
    ),
}

FABRICS: Final[dict[str, Fabric]] = {
    "efa-v2": Fabric(
        "efa-v2", "Elastic Fabric Adapter v2 (3200 Gbps per p5 instance)", "efa", 100, _EFA_CARDS
    ),
    "efa-v3": Fabric(
        "efa-v3", "Elastic Fabric Adapter v3 (3200 Gbps per p5en instance)", "efa", 200, _EFA_CARDS
    ),
    "efa-v1": Fabric("efa-v1", "Elastic Fabric Adapter (400 Gbps per p4d)", "efa", 100, _EFA_CARDS),
    "ib-ndr400": Fabric(
        "ib-ndr400",
        "InfiniBand NDR 400 Gb/s",
        "infiniband",
        400,
        Source("https://www.nvidia.com/en-us/networking/quantum2/", "2026-11-30"),
    ),
    "ib-hdr200": Fabric(
        "ib-hdr200",
        "InfiniBand HDR 200 Gb/s",
        "infiniband",
        200,
        Source("https://www.nvidia.com/en-us/networking/infiniband-switching/", "2026-11-30"),
    ),
}

INSTANCE_TYPES: Final[dict[str, InstanceType]] = {
    "p5.48xlarge": InstanceType(
        "p5.48xlarge",
        "h100-sxm",
        8,
        192,
        2,
        48,
        2,
        2048,
        32,
        32,
        "efa-v2",
        3200,
        55.04,
        _PRICE_CUT_2025,
        _EC2_ACCEL,
    ),
    "p5e.48xlarge": InstanceType(
        "p5e.48xlarge",
        "h200",
        8,
        192,
        2,
        48,
        2,
        2048,
        32,
        32,
        "efa-v2",
        3200,
        63.44,
        _PRICE_CUT_2025,
        _EC2_ACCEL,
    ),
    "p5en.48xlarge": InstanceType(
        "p5en.48xlarge",
        "h200",
        8,
        192,
        2,
        48,
        2,
        2048,
        16,
        16,
        "efa-v3",
        3200,
        63.30,
        _PRICE_CUT_2025,
        _EC2_ACCEL,
    ),
    "p4d.24xlarge": InstanceType(
        "p4d.24xlarge",
        "a100-40gb",
        8,
        96,
        2,
        24,
        2,
        1152,
        4,
        4,
        "efa-v1",
        400,
        21.96,
        _PRICE_CUT_2025,
        _EC2_P4,
    ),
    "p4de.24xlarge": InstanceType(
        "p4de.24xlarge",
        "a100-80gb",
        8,
        96,
        2,
        24,
        2,
        1152,
        4,
        4,
        "efa-v1",
        400,
        27.45,
        _PRICE_CUT_2025,
        _EC2_P4,
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
