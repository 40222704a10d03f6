"""Every acceptance check, in the order an operator reads them; evaluate one node against its profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from gpucluster.accept.checks_fabric import hca_count, hca_rate, hca_state_active, nvidia_peermem, pcie_links
from gpucluster.accept.checks_gpu import (
    driver_version,
    ecc_errors,
    fabric_manager,
    gpu_count,
    gpu_memory,
    gpu_model,
    nvlink_up,
    persistence_mode,
)
from gpucluster.accept.checks_perf import dcgm_diag, nccl_multi_node, nccl_single_node
from gpucluster.accept.declared import Declared
from gpucluster.accept.fabric_finding import Finding
from gpucluster.accept.observations import Observations
from gpucluster.accept.observed import Observed, observe
from gpucluster.accept.results import CheckResult

Check = Callable[[Declared, Observed], CheckResult]

CHECKS: Final[tuple[Check, ...]] = (
    gpu_count,
    gpu_model,
    gpu_memory,
    driver_version,
    ecc_errors,
    nvlink_up,
    persistence_mode,
    fabric_manager,
    hca_count,
    hca_state_active,
    hca_rate,
    nvidia_peermem,
    pcie_links,
    dcgm_diag,
    nccl_single_node,
    nccl_multi_node,
)


def run_checks(
    declared: Declared, observations: Observations, fabric: Finding | None = None
) -> list[CheckResult]:
    """Compare one node's observations (and its fabric finding) with its profile; one result per check."""
    observed = observe(observations, fabric)
    return [check(declared, observed) for check in CHECKS]
