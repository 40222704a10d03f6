"""The CLI: exit codes, messages without tracebacks, atomic render, summary, schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpucluster import exit_codes
from gpucluster.cli import main
from tests.conftest import ROOT

MALFORMED = ROOT / "tests" / "clusterfile" / "malformed"


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
    assert "Total: up to 20 GPU nodes, 160 GPUs" in result.stdout  # p5-spot's two models share 8
    assert "may launch p5.48xlarge as p5-spot-[1-8], p5e.48xlarge as p5-spot-h200-[1-8]" in result.stdout


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


def test_help_is_the_whole_map() -> None:
    result = _run("--help")
    assert result.returncode == 0
    expected = {"validate", "render", "show", "schema", "cost", "checkpoint-interval", "utilization"}
    expected |= {"review", "accept", "routing", "health"}
    listed = re.search(r"\{([a-z,-]+)\}", result.stdout)
    assert listed is not None and set(listed.group(1).split(",")) == expected
    for verb in expected:
        assert f"\n    {verb} " in result.stdout or f"\n    {verb}\n" in result.stdout, verb
    # accept's own steps are named on the top-level map, and `accept --help` details them.
    assert "`evaluate`" in result.stdout and "`summarize`" in result.stdout
    accept = _run("accept", "--help")
    assert accept.returncode == 0
    assert "evaluate" in accept.stdout and "summarize" in accept.stdout
    # routing's own steps are named on the top-level map too.
    assert "`explain`" in result.stdout and "`replay`" in result.stdout


def _warning_cluster(tmp_path: Path) -> Path:
    """The example without its checkpoint bucket: valid, with one warning on its spot group."""
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    data["aws"]["checkpoint"] = None
    path = tmp_path / "warn.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_verb_that_loads_a_cluster_prints_its_warnings_once_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = str(_warning_cluster(tmp_path))
    sacct = str(ROOT / "tests" / "cost" / "sacct" / "example-day.txt")
    observations = str(ROOT / "tests" / "accept" / "samples" / "testrack" / "observations.json")
    runs = {
        "validate": ["validate", cluster],
        "render": ["render", cluster, "--out", str(tmp_path / "out")],
        "show": ["show", cluster],
        "cost": ["cost", cluster, "--format", "json"],
        "checkpoint-interval": ["checkpoint-interval", cluster, "--format", "json"],
        "utilization": ["utilization", cluster, "--sacct", sacct, "--format", "json"],
        "accept evaluate": [
            "accept",
            "evaluate",
            "--cluster",
            cluster,
            "--host",
            "gpu-a01",
            "--observations",
            observations,
            "--out",
            str(tmp_path / "accept"),
        ],
    }
    for name, argv in runs.items():
        assert main(argv) == exit_codes.OK, name
        out, err = capsys.readouterr()
        assert err.count("warning: ") == 1 and "aws.capacity[1].market" in err, (name, err)
        assert "warning: " not in out and "aws.capacity[1].market" not in out, name
        if "json" in argv or name == "accept evaluate":
            json.loads(out)  # stdout stays machine-readable
