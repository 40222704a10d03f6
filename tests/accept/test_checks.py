"""Acceptance checks: a healthy node passes, an unhealthy one fails with named reasons, and a
test-rack node (no driver, no HCAs, no DCGM or nccl-tests) fails every hardware check clearly."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gpucluster.accept.checks import CHECKS, run_checks
from gpucluster.accept.checks_perf import NOT_IN_FABRIC_TEST
from gpucluster.accept.declared import Declared, declared_for
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.fabric_finding import Finding
from gpucluster.accept.observations import Observations, observations_from
from gpucluster.accept.results import CheckResult
from gpucluster.clusterfile import Cluster, load_text
from gpucluster_rack.rack_cluster import rack_cluster_file
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "accept" / "samples"
NO_DRIVER = "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
NO_IB = "ibstat lists no mlx5* InfiniBand CAs"  # recorded: ibstat prints nothing, rc 0, without HCAs
HARDWARE_CHECKS = [c.__name__ for c in CHECKS if c.__name__ != "nccl_multi_node"]


def _ok(path: str) -> dict[str, Any]:
    return {"rc": 0, "stdout": (SAMPLES / path).read_text(encoding="utf-8"), "stderr": ""}


def node_commands(kind: str) -> dict[str, Any]:
    """The observations contract for the healthy or unhealthy sample node."""
    if kind == "testrack":
        return dict(json.loads((SAMPLES / "testrack" / "observations.json").read_text())["commands"])
    return {
        "nvidia_smi_xml": _ok(f"{kind}/nvidia-smi-q-x.xml"),
        "nvidia_smi_nvlink": _ok(f"{kind}/nvidia-smi-nvlink-s.txt"),
        "fabricmanager": {"rc": 0, "stdout": "active\n", "stderr": ""},
        "ibstat": _ok(f"{kind}/ibstat.txt"),
        "lsmod": _ok(f"{kind}/lsmod.txt"),
        "lspci_hca": _ok(f"{kind}/lspci-vv-d-15b3.txt"),
        "dcgm_diag": _ok(f"{kind}/dcgmi-diag-r2-j.json") | ({"rc": 226} if kind == "unhealthy" else {}),
        "nccl_single": _ok(f"{kind}/all_reduce_perf.txt"),
    }


def node(kind: str, **changes: Any) -> Observations:
    return observations_from({"commands": node_commands(kind) | changes})


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


@pytest.fixture(scope="module")
def dgx(example: Cluster) -> Declared:
    return declared_for(example, "gpu-a01")


@pytest.fixture(scope="module")
def testrack_node() -> Declared:
    data = rack_cluster_file("t", [("ctl", "10.77.0.2"), ("node1", "10.77.0.3")], 8)
    return declared_for(load_text(yaml.safe_dump(data)).cluster, "node1")


def test_declared_from_the_profile(dgx: Declared) -> None:
    assert (dgx.gpu.name, dgx.gpu_count, dgx.nvswitch, dgx.hca_count, dgx.hca_prefix) == (
        "NVIDIA H100 80GB HBM3",
        8,
        True,
        8,
        "mlx5",
    )
    assert (dgx.driver_version, dgx.dcgm_level, dgx.min_single_node_busbw_gbs) == ("570.172.08", 2, 400.0)
    assert dgx.min_multi_node_busbw_gbs == 320.0


@pytest.mark.parametrize("host", ["head01", "p5-od-1", "nope"])
def test_declared_only_for_rack_nodes(example: Cluster, host: str) -> None:
    with pytest.raises(AcceptInputError, match=f"host '{host}' is not a node of any rack"):
        declared_for(example, host)


def test_healthy_node_passes(dgx: Declared) -> None:
    results = by_name(run_checks(dgx, node("healthy")))
    assert [n for n, r in results.items() if r.status != "pass"] == ["nccl_multi_node"]
    assert results["nccl_multi_node"].message == f"skipped: {NOT_IN_FABRIC_TEST}"
    assert results["nccl_single_node"].found == "peak busbw 483.5 GB/s"


def test_unhealthy_node_fails_with_named_reasons(dgx: Declared) -> None:
    results = by_name(run_checks(dgx, node("unhealthy")))
    failed = {n: r.message for n, r in results.items() if r.status == "fail"}
    assert failed == {
        "ecc_errors": "expected no uncorrectable ECC error since the driver loaded, no pending or failed row "
        "remap, at most 1000 corrected per GPU, found GPU 5D:00.0 2 uncorrectable since the driver loaded "
        "(reset the GPU)",
        "nvlink_up": "expected all NVLink links active on 8 GPUs, found inactive: GPU 6 link 11",
        "hca_state_active": "expected 8 × InfiniBand NDR 400 Gb/s HCAs ACTIVE, "
        "found 7 (mlx5_4 port 1 Down/Polling)",
        "hca_rate": "expected 400 Gb/s on every HCA port, found mlx5_4 port 1 10 Gb/s",
        "nvidia_peermem": "expected kernel module nvidia_peermem loaded, found not loaded",
        "pcie_links": "expected 8 GPUs and 8 HCAs at full PCIe width/speed, "
        "found HCA 39:00.0 16GT/s x8 of 32GT/s x16",
        "dcgm_diag": "expected dcgmi diag -r 2: no test failed, found failed: GPU Memory "
        "(A DBE occurred on GPU 3 in the GPU memory test; drain the GPU and reset it before use.)",
        "nccl_single_node": "expected all_reduce busbw ≥ 400 GB/s at ≥ 1 GiB on 8 GPUs, "
        "found peak busbw 308.71 GB/s",
    }


def test_testrack_observations_fail_every_hardware_check_of_a_dgx_profile(dgx: Declared) -> None:
    results = by_name(run_checks(dgx, node("testrack")))
    assert [n for n, r in results.items() if r.status == "fail"] == HARDWARE_CHECKS
    messages = {n: r.message for n, r in results.items()}
    assert messages["gpu_count"] == f"expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs ({NO_DRIVER})"
    assert messages["driver_version"] == f"expected driver 570.172.08, found no driver ({NO_DRIVER})"
    assert messages["hca_count"] == f"expected 8 × InfiniBand NDR 400 Gb/s HCAs (mlx5*), found 0 ({NO_IB})"
    assert (
        messages["hca_state_active"] == f"expected 8 × InfiniBand NDR 400 Gb/s HCAs ACTIVE, found 0 ({NO_IB})"
    )
    assert messages["fabric_manager"] == "expected nvidia-fabricmanager active, found inactive"
    assert (
        messages["dcgm_diag"]
        == "expected dcgmi diag -r 2: no test failed, found no diagnostics (dcgmi diag: not installed)"
    )
    assert messages["nccl_single_node"] == (
        "expected all_reduce busbw ≥ 400 GB/s at ≥ 1 GiB on 8 GPUs, "
        "found no result (all_reduce_perf: not installed)"
    )
    assert "no HCA on the PCIe bus" in messages["pcie_links"]


def test_testrack_profile_fails_every_gpu_check_and_skips_absent_hardware(testrack_node: Declared) -> None:
    results = by_name(run_checks(testrack_node, node("testrack")))
    failed = [n for n, r in results.items() if r.status == "fail"]
    skipped = [n for n, r in results.items() if r.status == "skip"]
    assert failed == [
        "gpu_count",
        "gpu_model",
        "gpu_memory",
        "driver_version",
        "ecc_errors",
        "persistence_mode",
        "hca_count",
        "hca_state_active",
        "hca_rate",
        "nvidia_peermem",
        "pcie_links",
        "dcgm_diag",
        "nccl_single_node",
    ]
    assert "pass" not in {r.status for r in results.values()}
    assert results["nvlink_up"].message == "skipped: the profile has no NVSwitch"
    assert results["hca_count"].message.startswith(
        "expected 8 × InfiniBand NDR 400 Gb/s HCAs (mlx5*), found 0"
    )
    assert set(skipped) == {"nvlink_up", "fabric_manager", "nccl_multi_node"}
    assert results["gpu_count"].message == f"expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs ({NO_DRIVER})"


@pytest.mark.parametrize(
    ("changes", "check", "message"),
    [
        (
            {"nvidia_smi_xml": None},
            "gpu_count",
            "expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs (nvidia-smi: not installed)",
        ),
        (
            {"nvidia_smi_xml": {"rc": 0, "stdout": "<nvidia_smi_log/>", "stderr": ""}},
            "gpu_model",
            "expected NVIDIA H100 80GB HBM3, found no GPUs (nvidia-smi lists no GPUs)",
        ),
        (
            {"nvidia_smi_xml": {"rc": 0, "stdout": "oops", "stderr": ""}},
            "gpu_count",
            "expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs (nvidia-smi: unreadable output "
            "(not XML from `nvidia-smi -q -x` (syntax error: line 1, column 0)))",
        ),
        (
            {"ibstat": {"rc": 0, "stdout": "", "stderr": ""}},
            "hca_count",
            "expected 8 × InfiniBand NDR 400 Gb/s HCAs (mlx5*), "
            "found 0 (ibstat lists no mlx5* InfiniBand CAs)",
        ),
        (
            {"fabricmanager": None},
            "fabric_manager",
            "expected nvidia-fabricmanager active, found no state (systemctl: not installed)",
        ),
        (
            {"lsmod": {"rc": 127, "stdout": "", "stderr": ""}},
            "nvidia_peermem",
            "expected kernel module nvidia_peermem loaded, found no module list (lsmod: not installed)",
        ),
        (
            {
                "lspci_hca": {
                    "rc": 0,
                    "stdout": "17:00.0 Infiniband controller: X\n\tCapabilities: <access denied>\n",
                    "stderr": "",
                }
            },
            "pcie_links",
            "expected 8 GPUs and 8 HCAs at full PCIe width/speed, "
            "found 0 HCA functions with link status (lspci needs root to show LnkSta)",
        ),
        (
            {
                "dcgm_diag": {
                    "rc": 1,
                    "stdout": "",
                    "stderr": "Error: unable to establish a connection to the specified host: localhost\n",
                }
            },
            "dcgm_diag",
            "expected dcgmi diag -r 2: no test failed, found no diagnostics "
            "(dcgmi diag: Error: unable to establish a connection to the specified host: localhost)",
        ),
    ],
)
def test_a_missing_or_failed_tool_fails_its_check_in_its_own_words(
    dgx: Declared, changes: dict[str, Any], check: str, message: str
) -> None:
    result = by_name(run_checks(dgx, node("healthy", **changes)))[check]
    assert (result.status, result.message) == ("fail", message)


def test_wrong_model_driver_and_persistence(dgx: Declared) -> None:
    xml = (SAMPLES / "healthy" / "nvidia-smi-q-x.xml").read_text()
    xml = xml.replace("570.172.08", "570.86.15").replace(
        "<persistence_mode>Enabled", "<persistence_mode>Disabled", 1
    )
    xml = xml.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", 1)
    results = by_name(run_checks(dgx, node("healthy", nvidia_smi_xml={"rc": 0, "stdout": xml, "stderr": ""})))
    assert results["driver_version"].message == "expected driver 570.172.08, found driver 570.86.15"
    assert results["gpu_model"].found == "1 × NVIDIA H100 PCIe, 7 × NVIDIA H100 80GB HBM3"
    assert results["persistence_mode"].found == "Disabled on GPU 18:00.0"
    assert results["gpu_count"].status == "pass"


def test_multi_node_from_the_fabric_finding_and_data_errors(dgx: Declared) -> None:
    slow = Finding("fail", "bad node: every pair with it failed (a+b, b+c; peak busbw 179.51 GB/s)")
    results = by_name(run_checks(dgx, node("healthy"), slow))
    assert results["nccl_multi_node"].message == (
        "expected all_reduce busbw ≥ 320 GB/s across nodes, "
        "found bad node: every pair with it failed (a+b, b+c; peak busbw 179.51 GB/s)"
    )
    alone = Finding("skip", "no pair to test the fabric with")
    assert by_name(run_checks(dgx, node("healthy"), alone))["nccl_multi_node"].message == (
        "skipped: no pair to test the fabric with"
    )
    wrong = _ok("healthy/all_reduce_perf.txt")
    wrong["stdout"] = wrong["stdout"].replace("471.32      0", "471.32      5")
    wrong["rc"] = 1
    results = by_name(run_checks(dgx, node("healthy", nccl_single=wrong)))
    assert results["nccl_single_node"].found == "5 wrong values (data corruption)"


def test_profile_without_hcas_skips_the_infiniband_checks(dgx: Declared) -> None:
    import dataclasses

    results = by_name(run_checks(dataclasses.replace(dgx, hca_count=0), node("testrack")))
    assert results["hca_count"].status == "skip"
    assert results["hca_count"].message == "skipped: the profile declares no HCAs"
