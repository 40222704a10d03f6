"""The text exposition parser on recorded dcgm-exporter output, and on the format's corner cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.utilization.exposition import ExpositionError, as_series, parse_exposition
from gpucluster.utilization.measure import measure
from gpucluster.utilization.series import ENGINE_ACTIVE

SAMPLES = Path(__file__).parent / "samples"
RECORDED = (SAMPLES / "l40s-dcgm-exporter.prom").read_text()


def test_the_recorded_page_parses_with_the_exporters_labels() -> None:
    page = parse_exposition(RECORDED, "l40s-dcgm-exporter.prom")
    assert len(page.samples) == 8 and page.types[ENGINE_ACTIVE] == "gauge"
    assert page.types["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == "counter"
    (active,) = page.of(ENGINE_ACTIVE)
    assert active.value == 0.0 and active.timestamp_ms is None
    assert active.labels == {
        "gpu": "0",
        "UUID": "GPU-5b4e07f6-3a86-4340-039d-25f2a83cdc43",
        "pci_bus_id": "00000000:00:07.0",
        "device": "nvidia0",
        "modelName": "NVIDIA L40S",
        "Hostname": "gpu1-wl8sg",
        "DCGM_FI_DRIVER_VERSION": "595.58.03",
    }
    assert page.of("DCGM_FI_PROF_DRAM_ACTIVE")[0].value == pytest.approx(0.000131)
    assert page.help[ENGINE_ACTIVE] == "Ratio of time the graphics engine is active."


def test_one_recorded_scrape_is_one_step_of_one_available_idle_gpu() -> None:
    page = parse_exposition(RECORDED)
    series = as_series(page, ENGINE_ACTIVE, 1_800_000_000, {"site": "cloud", "node_group": "l40s"})
    m = measure(series, 1_800_000_000, 1_800_000_030, 30)
    assert (m.overall.gpus, m.overall.available_gpu_hours, m.overall.active_gpu_hours) == (1, 30 / 3600, 0.0)
    assert m.groups[0].node_group == "l40s"


def test_hpc_job_label_spaces_escapes_timestamps_and_special_values() -> None:
    """Constructed, not recorded: the job label dcgm-exporter adds, as its HPC job mapping writes it."""
    text = (
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="3", UUID="GPU-x",Hostname="gpu-a01",hpc_job="4711",}'
        " 0.75 1700000000000\n"
        'odd{path="a\\\\b",quote="say \\"hi\\"",nl="x\\ny"} NaN\n'
        "bare_metric +Inf\n"
    )
    page = parse_exposition(text)
    job, odd, bare = page.samples
    assert (
        job.labels["hpc_job"] == "4711"
        and job.labels["UUID"] == "GPU-x"
        and job.timestamp_ms == 1700000000000
    )
    assert odd.labels == {"path": "a\\b", "quote": 'say "hi"', "nl": "x\ny"} and odd.value != odd.value
    assert bare.labels == {} and bare.value == float("inf")
    assert len(as_series(page, "odd", 0, {})) == 0  # NaN is no sample


@pytest.mark.parametrize(
    "line",
    ['DCGM_X{gpu="0"', "DCGM_X{gpu=0} 1", 'DCGM_X{gpu="0"} one', "DCGM_X 1 2 3", '{gpu="0"} 1'],
)
def test_a_malformed_line_names_the_source_and_line(line: str) -> None:
    with pytest.raises(ExpositionError, match=r"^node:9400:2: "):
        parse_exposition(f"# TYPE DCGM_X gauge\n{line}\n", "node:9400")
