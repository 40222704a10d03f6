"""Checks that exercise the hardware: DCGM diagnostics and nccl-tests all_reduce bus bandwidth."""

from __future__ import annotations

from typing import Final

from gpucluster.accept.declared import Declared
from gpucluster.accept.nccl_tests import GIB_BYTES, NcclResult
from gpucluster.accept.observed import Observed, Parsed
from gpucluster.accept.results import CheckResult, failed, skipped, verdict

NOT_IN_FABRIC_TEST: Final = (
    "the node was not in the fabric test (it takes idle nodes that passed every other check "
    "and are not drained by an operator)"
)


def dcgm_diag(d: Declared, obs: Observed) -> CheckResult:
    """DCGM diagnostics at the profile's level pass on every GPU."""
    if d.gpu_count == 0:
        return skipped("dcgm_diag", "the profile declares no GPUs")
    expected = f"dcgmi diag -r {d.dcgm_level}: no test failed"
    diag = obs.dcgm.value
    if diag is None:
        return failed("dcgm_diag", expected, "no diagnostics", obs.dcgm.problem)
    failures = [f"{t.name}" + (f" ({t.detail})" if t.detail else "") for t in diag.failed]
    found = "failed: " + "; ".join(failures) if failures else f"{len(diag.tests)} tests, none failed"
    return verdict("dcgm_diag", diag.passed, expected, found)


def busbw_check(name: str, expected: str, min_gbs: float, run: Parsed[NcclResult]) -> CheckResult:
    """Peak bus bandwidth at ≥ 1 GiB reaches `min_gbs`, with no data errors."""
    if run.value is None:
        return failed(name, expected, "no result", run.problem)
    if run.value.wrong:
        return failed(name, expected, f"{run.value.wrong} wrong values (data corruption)")
    peak = run.value.peak_busbw_gbs(GIB_BYTES)
    if peak is None:
        return failed(name, expected, "no result at ≥ 1 GiB (raise -b/-e to 1G or more)")
    return verdict(name, peak >= min_gbs, expected, f"peak busbw {peak:g} GB/s")


def nccl_single_node(d: Declared, obs: Observed) -> CheckResult:
    """all_reduce over the node's GPUs reaches the GPU model's bus bandwidth at ≥ 1 GiB."""
    if d.gpu_count == 0:
        return skipped("nccl_single_node", "the profile declares no GPUs")
    expected = f"all_reduce busbw ≥ {d.min_single_node_busbw_gbs:g} GB/s at ≥ 1 GiB on {d.gpu_count} GPUs"
    return busbw_check("nccl_single_node", expected, d.min_single_node_busbw_gbs, obs.nccl_single)


def nccl_multi_node(d: Declared, obs: Observed) -> CheckResult:
    """all_reduce across the tested nodes and with each ring neighbour reaches the fabric's bus bandwidth."""
    if d.min_multi_node_busbw_gbs is None:
        return skipped("nccl_multi_node", "the profile declares no HCAs")
    finding = obs.fabric
    if finding is None:
        return skipped("nccl_multi_node", NOT_IN_FABRIC_TEST)
    expected = f"all_reduce busbw ≥ {d.min_multi_node_busbw_gbs:g} GB/s across nodes"
    if finding.status == "skip":
        return skipped("nccl_multi_node", finding.found)
    return verdict("nccl_multi_node", finding.status == "pass", expected, finding.found, finding.problem)
