"""Acceptance parsers on the samples in tests/accept/samples (see PROVENANCE.md there) and on garbage."""

from __future__ import annotations

import pytest

from gpucluster.accept.dcgm import parse_dcgm_diag
from gpucluster.accept.errors import ParseError, first_line
from gpucluster.accept.ibstat import parse_ibstat
from gpucluster.accept.lsmod import parse_lsmod
from gpucluster.accept.lspci import parse_lspci
from gpucluster.accept.nccl_tests import GIB_BYTES, parse_nccl_tests
from gpucluster.accept.nvidia_smi import parse_nvidia_smi_xml, parse_nvlink_status
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "accept" / "samples"
GARBAGE = ["", "garbage\x00", "<html><body>502 Bad Gateway</body></html>", '{"foo": 1}', "Segmentation fault"]


def sample(path: str) -> str:
    return (SAMPLES / path).read_text(encoding="utf-8")


def test_nvidia_smi_healthy() -> None:
    smi = parse_nvidia_smi_xml(sample("healthy/nvidia-smi-q-x.xml"))
    assert smi.driver_version == "570.172.08"
    assert len(smi.gpus) == 8
    gpu = smi.gpus[0]
    assert (gpu.bus_id, gpu.name, gpu.memory_mib, gpu.persistence_mode) == (
        "00000000:18:00.0",
        "NVIDIA H100 80GB HBM3",
        81559,
        True,
    )
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (
        5,
        5,
        16,
        16,
    )
    assert all(g.ecc_volatile.uncorrectable == g.ecc_aggregate.corrected == 0 for g in smi.gpus)


def test_nvidia_smi_ecc_errors_summed_over_sram_and_dram() -> None:
    gpu = parse_nvidia_smi_xml(sample("unhealthy/nvidia-smi-q-x.xml")).gpus[3]
    assert (gpu.ecc_volatile.corrected, gpu.ecc_volatile.uncorrectable) == (12, 2)
    assert (gpu.ecc_aggregate.corrected, gpu.ecc_aggregate.uncorrectable) == (40, 2)


def test_nvidia_smi_pre_535_ecc_layout() -> None:
    xml = """<nvidia_smi_log><driver_version>525.147.05</driver_version><gpu id="00000000:07:00.0">
      <product_name>NVIDIA A100-SXM4-80GB</product_name><persistence_mode>Disabled</persistence_mode>
      <fb_memory_usage><total>81920 MiB</total></fb_memory_usage>
      <ecc_errors><volatile><single_bit><device_memory>3</device_memory><total>3</total></single_bit>
      <double_bit><device_memory>0</device_memory><total>0</total></double_bit></volatile>
      <aggregate><single_bit><total>N/A</total></single_bit><double_bit><total>1</total></double_bit></aggregate>
      </ecc_errors></gpu></nvidia_smi_log>"""
    gpu = parse_nvidia_smi_xml(xml).gpus[0]
    assert (gpu.ecc_volatile.corrected, gpu.ecc_volatile.uncorrectable) == (3, 0)
    assert (gpu.ecc_aggregate.corrected, gpu.ecc_aggregate.uncorrectable) == (0, 1)
    assert not gpu.persistence_mode
    assert gpu.pcie_width_max is None


@pytest.mark.parametrize("text", [*GARBAGE, sample("testrack/nvidia-smi-q-x.stdout.txt"), "<other/>"])
def test_nvidia_smi_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nvidia_smi_xml(text)


def test_nvidia_smi_gpu_without_memory_is_an_error() -> None:
    with pytest.raises(ParseError, match="fb_memory_usage"):
        parse_nvidia_smi_xml(
            '<nvidia_smi_log><gpu id="0"><product_name>x</product_name></gpu></nvidia_smi_log>'
        )


def test_nvlink_status() -> None:
    healthy = parse_nvlink_status(sample("healthy/nvidia-smi-nvlink-s.txt"))
    assert len(healthy) == 8
    assert all(len(g.links_active) == 18 and all(g.links_active.values()) for g in healthy)
    unhealthy = parse_nvlink_status(sample("unhealthy/nvidia-smi-nvlink-s.txt"))
    assert [(g.index, n) for g in unhealthy for n, up in g.links_active.items() if not up] == [(6, 11)]


@pytest.mark.parametrize("text", GARBAGE)
def test_nvlink_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nvlink_status(text)


def test_ibstat() -> None:
    cas = parse_ibstat(sample("healthy/ibstat.txt"))
    assert [ca.name for ca in cas] == [f"mlx5_{n}" for n in range(10)]
    port = cas[0].ports[0]
    assert (port.number, port.state, port.physical_state, port.rate_gbps, port.link_layer) == (
        1,
        "Active",
        "LinkUp",
        400,
        "InfiniBand",
    )
    assert cas[8].ports[0].link_layer == "Ethernet"
    down = parse_ibstat(sample("unhealthy/ibstat.txt"))[4].ports[0]
    assert (down.state, down.physical_state, down.rate_gbps) == ("Down", "Polling", 10)


def test_ibstat_without_cas_is_empty() -> None:
    assert parse_ibstat("") == []


@pytest.mark.parametrize("text", [*GARBAGE[1:], "Port 1:\n"])
def test_ibstat_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ibstat(text)


def test_lsmod() -> None:
    assert "nvidia_peermem" in parse_lsmod(sample("healthy/lsmod.txt"))
    assert "nvidia_peermem" not in parse_lsmod(sample("unhealthy/lsmod.txt"))
    with pytest.raises(ParseError):  # recorded on the test-rack host: its kernel has no /proc/modules
        parse_lsmod(sample("testrack/lsmod.stderr.txt"))


@pytest.mark.parametrize("text", [*GARBAGE, "Module Size Used by\nnvidia big 0\n"])
def test_lsmod_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_lsmod(text)


def test_lspci() -> None:
    devices = parse_lspci(sample("healthy/lspci-vv-d-15b3.txt"))
    assert len(devices) == 10
    first = devices[0]
    assert (first.address, first.cap_speed_gts, first.cap_width, first.sta_speed_gts, first.sta_width) == (
        "17:00.0",
        32.0,
        16,
        32.0,
        16,
    )
    assert first.description.startswith("Infiniband controller: Mellanox")
    assert all(d.at_max for d in devices)
    degraded = [d for d in parse_lspci(sample("unhealthy/lspci-vv-d-15b3.txt")) if not d.at_max]
    assert [(d.address, d.sta_speed_gts, d.sta_width) for d in degraded] == [("39:00.0", 16.0, 8)]


def test_lspci_without_root_has_no_link_status() -> None:
    text = (
        "17:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
        "\tCapabilities: <access denied>\n"
    )
    assert parse_lspci(text)[0].sta_width is None
    assert parse_lspci("") == []


@pytest.mark.parametrize("text", GARBAGE[1:])
def test_lspci_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_lspci(text)


def test_dcgm_diag() -> None:
    healthy = parse_dcgm_diag(sample("healthy/dcgmi-diag-r2-j.json"))
    assert healthy.passed
    assert len(healthy.tests) == 11
    assert {t.category for t in healthy.tests} == {"Deployment", "Integration", "Hardware"}
    unhealthy = parse_dcgm_diag(sample("unhealthy/dcgmi-diag-r2-j.json"))
    assert not unhealthy.passed
    assert [t.name for t in unhealthy.failed] == ["GPU Memory"]
    assert unhealthy.failed[0].detail.startswith("A DBE occurred on GPU 3")


def test_dcgm_diag_4x_root_and_skips() -> None:
    text = (
        '{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": ['
        '{"name": "memory", "results": [{"status": "Skip"}]},'
        '{"name": "pcie", "results": [{"status": "Warn", "gpu_ids": "1", "warnings": ["replays"]}]}]}]}}'
    )
    diag = parse_dcgm_diag(text)
    assert diag.passed
    assert [(t.status, t.detail) for t in diag.tests] == [("skip", ""), ("warn", "GPU 1: replays")]


@pytest.mark.parametrize(
    "text",
    [
        *GARBAGE,
        '{"DCGM GPU Diagnostic": {"test_categories": []}}',
        '{"DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"name": "x", "results": [{}]}]}]}}',
        '{"DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"name": "x"}]}]}}',
        '{"DCGM GPU Diagnostic": {"test_categories": [3]}}',
    ],
)
def test_dcgm_diag_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_dcgm_diag(text)


def test_nccl_tests() -> None:
    result = parse_nccl_tests(sample("healthy/all_reduce_perf.txt"))
    assert [r.size_bytes for r in result.rows] == [GIB_BYTES * 2**n for n in range(4)]
    first = result.rows[0]
    assert (first.oop_time_us, first.oop_algbw_gbs, first.oop_busbw_gbs, first.ip_busbw_gbs) == (
        3986.8,
        269.33,
        471.32,
        471.72,
    )
    assert result.peak_busbw_gbs() == 483.5
    assert result.avg_busbw_gbs == 478.7325
    assert result.wrong == 0
    assert parse_nccl_tests(sample("unhealthy/all_reduce_perf.txt")).peak_busbw_gbs() == 308.71


def test_nccl_tests_small_sizes_do_not_count_and_wrong_values_do() -> None:
    text = (
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
        "   1048576  262144 float sum -1 30.1 34.8 60.9 0 29.8 35.1 61.5 N/A\n"
        "   2097152  524288 float sum -1 40.2 52.1 91.2 3 40.0 52.4 91.7 0\n"
    )
    result = parse_nccl_tests(text)
    assert result.peak_busbw_gbs() is None
    assert result.peak_busbw_gbs(0) == 91.7
    assert result.wrong == 3
    assert result.avg_busbw_gbs is None


@pytest.mark.parametrize("text", [*GARBAGE, "1073741824 268435456 float sum -1 x y z 0 a b c 0\n"])
def test_nccl_tests_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nccl_tests(text)


def test_first_line_keeps_the_first_sentence_of_long_lines() -> None:
    text = sample("testrack/nvidia-smi-q-x.stdout.txt")
    assert first_line(text) == "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    assert first_line("\n  short  \n") == "short"
    assert first_line("x" * 200, 10) == "x" * 9 + "…"


def test_samples_have_provenance() -> None:
    provenance = (SAMPLES / "PROVENANCE.md").read_text(encoding="utf-8")
    for path in sorted(SAMPLES.rglob("*")):
        if path.is_file() and path.name != "PROVENANCE.md":
            assert str(path.relative_to(SAMPLES)) in provenance, f"{path} has no provenance entry"
