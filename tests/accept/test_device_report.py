"""bench/device_accept_report.py: raw probe files in, the playbook's observations contract out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "accept" / "samples" / "healthy"


def test_raw_outputs_become_observations_and_parses(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, sample in {
        "nvidia_smi_xml": "nvidia-smi-q-x.xml",
        "nccl_single": "all_reduce_perf.txt",
    }.items():
        (raw / f"{name}.stdout").write_text((SAMPLES / sample).read_text())
        (raw / f"{name}.stderr").write_text("")
        (raw / f"{name}.rc").write_text("0\n")
    (raw / "lsmod.stdout").write_text("")
    (raw / "lsmod.stderr").write_text("bash: line 1: lsmod: command not found\n")
    (raw / "lsmod.rc").write_text("127\n")
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "device_accept_report.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    observations = json.loads((tmp_path / "observations.json").read_text())
    assert sorted(observations["commands"]) == ["lsmod", "nccl_single", "nvidia_smi_xml"]
    assert observations["commands"]["lsmod"]["rc"] == 127
    assert "nvidia_smi_xml: rc 0, parsed:" in result.stdout and "NVIDIA H100 80GB HBM3" in result.stdout
    assert "nccl_single: rc 0, parsed:" in result.stdout
    assert "lsmod: rc 127, not parsed:" in result.stdout and "command not found" in result.stdout
