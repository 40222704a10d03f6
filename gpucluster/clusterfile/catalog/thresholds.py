"""Acceptance thresholds for nccl-tests all_reduce bus bandwidth, per GPU model and per fabric.

Each figure carries its source and a one-line note of how it was derived. A hardware profile's
`acceptance.min_single_node_busbw_gbs` / `min_multi_node_busbw_gbs` override these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gpucluster.clusterfile.catalog.hardware import Source

_AZURE_NHC_H100: Final = Source(
    url="https://github.com/Azure/azurehpc-health-checks/blob/main/conf/nd96isr_h100_v5.conf",
    date="2026-12-02",
)
_AZURE_NHC_A100: Final = Source(
    url="https://github.com/Azure/azurehpc-health-checks/blob/main/conf/nd96amsr_a100_v4.conf",
    date="2026-12-02",
)
_NCCL_TESTS_PERF: Final = Source(
    url="https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md", date="2026-12-02"
)


@dataclass(frozen=True, kw_only=True)
class BusBandwidth:
    """A minimum all_reduce bus bandwidth with where it came from."""

    min_busbw_gbs: float
    source: Source
    note: str


# Single node, all GPUs of the node (8), all_reduce_perf peak busbw at ≥ 1 GiB, GB/s.
SINGLE_NODE_BUSBW: Final[dict[str, BusBandwidth]] = {
    "h100-sxm": BusBandwidth(
        min_busbw_gbs=400.0,
        source=_AZURE_NHC_H100,
        note="Azure NHC gates 8×H100 NVLink4 at 460 GB/s with 16 GiB messages; ~87% of it for 1 GiB messages",
    ),
    "h200": BusBandwidth(
        min_busbw_gbs=400.0,
        source=_AZURE_NHC_H100,
        note="same NVLink4/NVSwitch fabric as H100 SXM (900 GB/s per GPU), so the H100 figure applies",
    ),
    "a100-80gb": BusBandwidth(
        min_busbw_gbs=205.0,
        source=_AZURE_NHC_A100,
        note="Azure NHC gates 8×A100 NVLink3 at 228 GB/s with 4 GiB messages; 90% of it for 1 GiB messages",
    ),
    "a100-40gb": BusBandwidth(
        min_busbw_gbs=205.0,
        source=_AZURE_NHC_A100,
        note="same NVLink3/NVSwitch fabric as A100 80GB (600 GB/s per GPU), so the A100 80GB figure applies",
    ),
}

# Across nodes, per HCA port of the node (rail-optimised: one HCA per GPU), GB/s.
MULTI_NODE_BUSBW_PER_PORT: Final[dict[str, BusBandwidth]] = {
    "ib-ndr400": BusBandwidth(
        min_busbw_gbs=40.0,
        source=_NCCL_TESTS_PERF,
        note="busbw across nodes is bounded by the HCA line rate (400 Gb/s = 50 GB/s); 80% of it per port",
    ),
    "ib-hdr200": BusBandwidth(
        min_busbw_gbs=20.0,
        source=_NCCL_TESTS_PERF,
        note="busbw across nodes is bounded by the HCA line rate (200 Gb/s = 25 GB/s); 80% of it per port",
    ),
}


def single_node_min_busbw_gbs(gpu_model: str, override_gbs: float | None = None) -> float:
    """The single-node all_reduce busbw a node must reach: the profile's override or the catalog's."""
    if override_gbs is not None:
        return override_gbs
    return SINGLE_NODE_BUSBW[gpu_model].min_busbw_gbs


def multi_node_min_busbw_gbs(fabric: str, ports: int, override_gbs: float | None = None) -> float:
    """The multi-node all_reduce busbw across the fabric: the profile's override or per port × ports."""
    if override_gbs is not None:
        return override_gbs
    return MULTI_NODE_BUSBW_PER_PORT[fabric].min_busbw_gbs * ports
