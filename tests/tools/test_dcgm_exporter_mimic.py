"""The test rack's dcgm-exporter mimic serves what the real one does, read by gpucluster's own parser."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpucluster.utilization.exposition import parse_exposition
from gpucluster_rack import dcgm_exporter_mimic as mimic
from gpucluster_rack.nvidia_mimic import EXPORTER_FILES

COUNTERS = EXPORTER_FILES["etc/dcgm-exporter/default-counters.csv"]


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Load and fault directories of a node, in tmp_path."""
    monkeypatch.setattr(mimic, "LOAD_DIR", tmp_path / "load")
    monkeypatch.setattr(mimic, "FAULT_DIR", tmp_path / "faults")
    (tmp_path / "load").mkdir()
    (tmp_path / "jobs").mkdir()
    (tmp_path / "counters.csv").write_text(COUNTERS)
    return tmp_path


def test_the_default_counters_collect_engine_activity_but_not_occupancy_or_ecc(node: Path) -> None:
    page = parse_exposition(mimic.exposition(mimic.read_collectors(str(node / "counters.csv")), [0, 1], None))
    assert page.types["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == "gauge"
    assert [s.value for s in page.of("DCGM_FI_PROF_GR_ENGINE_ACTIVE")] == [0.0, 0.0]
    assert not page.of("DCGM_FI_PROF_SM_OCCUPANCY") and not page.of("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    labels = page.of("DCGM_FI_DEV_POWER_USAGE")[1].labels
    assert labels["gpu"] == "1" and labels["device"] == "nvidia1" and labels["modelName"] == mimic.MODEL
    assert "hpc_job" not in labels


def test_a_gpus_load_drives_its_fields_and_its_jobs_label_its_series(node: Path) -> None:
    (node / "load" / "1").write_text("0.8\n")
    (node / "jobs" / "1").write_text("41\n42\n")
    fields = [("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "engine"), ("DCGM_FI_DEV_POWER_USAGE", "gauge", "W")]
    page = parse_exposition(mimic.exposition(fields, [0, 1], str(node / "jobs")))
    active = {(s.labels["gpu"], s.labels.get("hpc_job", "")): s.value for s in page.of(fields[0][0])}
    assert active == {("0", ""): 0.0, ("1", "41"): 0.8, ("1", "42"): 0.8}
    power = {s.labels["gpu"]: s.value for s in page.of("DCGM_FI_DEV_POWER_USAGE")}
    assert power["0"] == mimic.IDLE_WATTS and mimic.IDLE_WATTS < power["1"] < mimic.BUSY_WATTS


def test_an_injected_xid_is_served_for_its_gpu_only(node: Path) -> None:
    (node / "faults" / "3").mkdir(parents=True)
    (node / "faults" / "3" / "DCGM_FI_DEV_XID_ERRORS").write_text("79\n")
    page = parse_exposition(mimic.exposition([("DCGM_FI_DEV_XID_ERRORS", "gauge", "xid")], [2, 3], None))
    assert {s.labels["gpu"]: s.value for s in page.of("DCGM_FI_DEV_XID_ERRORS")} == {"2": 0.0, "3": 79.0}


def test_the_program_serves_metrics_on_the_exporters_flags(node: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [
        sys.executable,
        mimic.__file__,
        "--address",
        f"127.0.0.1:{port}",
        "--collectors",
        str(node / "counters.csv"),
    ]
    # LOAD_DIR is /run/...: the child may not create it here, so it runs with the module's paths patched.
    bootstrap = (
        "import sys, pathlib; import gpucluster_rack.dcgm_exporter_mimic as m; "
        f"m.LOAD_DIR = pathlib.Path({str(node / 'load')!r}); sys.argv = {argv[1:]!r}; m.main()"
    )
    server = subprocess.Popen([sys.executable, "-c", bootstrap], stderr=subprocess.PIPE, text=True)
    try:
        page = None
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
                    page = answer.read().decode()
                    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                break
            except OSError:
                time.sleep(0.05)
        assert page is not None, "the mimic never answered"
        assert "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge" in page
        parse_exposition(page)
    finally:
        server.terminate()
        server.wait(timeout=10)
