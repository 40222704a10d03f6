"""Checks that exercise the hardware: DCGM diagnostics and nccl-tests all_reduce bus bandwidth."""

from __future__ import annotations

from gpucluster.accept.declared import Declared
from gpucluster.accept.nccl_tests import GIB_BYTES, NcclResult
from gpucluster.accept.observed import Observed, Parsed
from gpucluster.accept.results import CheckResult, failed, skipped, verdict


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


def _busbw(name: str, expected: str, min_gbs: float, run: Parsed[NcclResult]) -> CheckResult:
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
    return _busbw("nccl_single_node", expected, d.min_single_node_busbw_gbs, obs.nccl_single)


def nccl_multi_node(d: Declared, obs: Observed) -> CheckResult:
    """all_reduce across nodes reaches the fabric's bus bandwidth, when the rack test was run."""
    if d.min_multi_node_busbw_gbs is None:
        return skipped("nccl_multi_node", "the profile declares no HCAs")
    if obs.nccl_multi is None:
        return skipped("nccl_multi_node", "the multi-node test was not run")
    expected = f"all_reduce busbw ≥ {d.min_multi_node_busbw_gbs:g} GB/s at ≥ 1 GiB across nodes"
    return _busbw("nccl_multi_node", expected, d.min_multi_node_busbw_gbs, obs.nccl_multi)
