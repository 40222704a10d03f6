"""The CLI: exit codes, messages without tracebacks, atomic render, summary, schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.cli import main
from tests.conftest import ROOT

MALFORMED = ROOT / "tests" / "unit" / "malformed"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpucluster", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_validate_example_exits_zero() -> None:
    result = _run("validate", "clusters/example.yaml")
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_validate_defaults_to_example() -> None:
    assert _run("validate").returncode == 0


def test_malformed_file_exits_two_with_path_and_line() -> None:
    result = _run("validate", str(MALFORMED / "min-above-max.yaml"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "min-above-max.yaml:" in result.stderr and "aws.capacity[0].max_count" in result.stderr


def test_missing_file_exits_two() -> None:
    result = _run("show", "clusters/nope.yaml")
    assert result.returncode == 2 and "cannot read the file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("verb", ["validate", "show"])
def test_every_malformed_file_exits_two_in_process(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    for path in sorted(MALFORMED.glob("*.yaml")):
        assert main([verb, str(path)]) == 2, path.name
    assert "Traceback" not in capsys.readouterr().err


def test_show_summarises_sites_and_gpus() -> None:
    result = _run("show")
    assert result.returncode == 0
    assert "On-prem (10.10.0.0/16): 2 rack(s), 8 nodes, 64 GPUs" in result.stdout
    assert "up to 12 instances, 96 GPUs" in result.stdout
    assert "Total: up to 20 GPU nodes, 160 GPUs" in result.stdout


def test_render_writes_tree_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "build" / "example"
    assert main(["render", "clusters/example.yaml", "--out", str(out)]) == 0
    assert (out / "aws" / "p5-od" / "cloud-init" / "user-data").is_file()
    shared = (out / "shared" / "slurm" / "slurm.conf").read_text()
    assert (out / "onprem" / "rack-a" / "slurm" / "slurm.conf").read_text() == shared
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["groups"]["rack-b"]["hosts"] == ["gpu-b01", "gpu-b02", "gpu-b03", "gpu-b04"]
    assert manifest["groups"]["rack-b"]["files"]["nccl/nccl.conf"]["destination"] == "/etc/nccl.conf"


def test_render_replaces_old_tree_and_leaves_no_temp_dirs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    assert main(["render", "clusters/onprem-only.yaml", "--out", str(out)]) == 0
    assert not (out / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_render_of_bad_file_leaves_existing_tree_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("keep")
    assert main(["render", str(MALFORMED / "market-unknown.yaml"), "--out", str(out)]) == 2
    assert (out / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_schema_prints_json() -> None:
    result = _run("schema")
    assert result.returncode == 0
    assert json.loads(result.stdout)["title"] == "Cluster"


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "gpucluster"
    assert script.exists()
    assert (
        subprocess.run([str(script), "validate"], cwd=ROOT, capture_output=True, check=False).returncode == 0
    )
