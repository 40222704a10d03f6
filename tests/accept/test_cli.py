"""`gpucluster accept evaluate|summarize` in-process, its old alias, and thresholds with profile overrides."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.accept.declared import declared_for
from gpucluster.accept.fabric import FABRIC_OBSERVATIONS
from gpucluster.accept.report import DRAIN_REASON_MAX_CHARS, drain_reason
from gpucluster.accept.results import failed, passed
from gpucluster.cli import main as cli_main
from gpucluster.clusterfile import load_text
from gpucluster.clusterfile.catalog.hardware import FABRICS, GPU_MODELS
from gpucluster.clusterfile.catalog.thresholds import MULTI_NODE_BUSBW_PER_PORT, SINGLE_NODE_BUSBW
from tests.accept.example_at_sample_driver import EXAMPLE
from tests.accept.test_checks import node_commands
from tests.ansible import role_tasks
from tests.conftest import ROOT

TESTRACK_OBS = ROOT / "tests" / "accept" / "samples" / "testrack" / "observations.json"
TESTRACK_REASON = (
    "gpu_count: expected 8 x NVIDIA H100 80GB HBM3, found 0 GPUs "
    "(nvidia-smi: NVIDIA-SMI has failed because it couldnt communicate with the NVIDIA driver.)"
)


def main(argv: list[str]) -> int:
    return cli_main(["accept", *argv])


def write_obs(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.observations.json"
    path.write_text(json.dumps({"commands": node_commands(kind)}), encoding="utf-8")
    return path


def evaluate(cluster: Path, host: str, obs: Path, out: Path) -> int:
    args = ["evaluate", "--cluster", str(cluster), "--host", host, "--observations", str(obs)]
    return main([*args, "--out", str(out)])


def test_evaluate_testrack_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evaluate(EXAMPLE, "gpu-a01", TESTRACK_OBS, tmp_path) == 0
    line = json.loads(capsys.readouterr().out)
    assert line == {"host": "gpu-a01", "passed": False, "drain_reason": TESTRACK_REASON}
    report = json.loads((tmp_path / "gpu-a01.json").read_text())
    assert (report["cluster"], report["host"], report["profile"], report["passed"]) == (
        "example",
        "gpu-a01",
        "dgx-h100",
        False,
    )
    assert report["drain_reason"] == TESTRACK_REASON
    assert report["checks"][0] == {
        "name": "gpu_count",
        "status": "fail",
        "expected": "8 × NVIDIA H100 80GB HBM3",
        "found": "0 GPUs",
        "message": "expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs "
        "(nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.)",
    }
    assert report["timestamp"].endswith("+00:00")


def test_evaluate_then_summarize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path  # the playbook keeps HOST.observations.json next to the reports
    for host, kind in [("gpu-a01", "healthy"), ("gpu-a02", "unhealthy"), ("gpu-a03", "testrack")]:
        assert evaluate(EXAMPLE, host, write_obs(tmp_path, kind), out) == 0
    capsys.readouterr()
    assert main(["summarize", "--reports", str(out)]) == 0
    markdown = capsys.readouterr().out
    assert markdown == (out / "summary.md").read_text()
    lines = markdown.splitlines()
    assert lines[0] == "Acceptance: 1 of 3 nodes passed (example)."
    assert lines[2:5] == ["| host | passed | failed checks |", "| --- | --- | --- |", "| gpu-a01 | yes | — |"]
    assert lines[5].startswith("| gpu-a02 | no | `ecc_errors`, `nvlink_up`, `hca_state_active`")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["nodes"], summary["passed"], summary["failed"]) == (3, 1, 2)
    assert summary["hosts"][1]["drain_reason"].startswith("ecc_errors: expected no uncorrectable ECC error")
    assert summary["hosts"][0]["drain_reason"] is None
    # summarizing again ignores its own summary.json
    assert main(["summarize", "--reports", str(out)]) == 0


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("obs_text", "host", "message"),
    [
        (None, "gpu-a01", "cannot read the file"),
        ("{not json", "gpu-a01", "not valid JSON"),
        ('{"cmds": {}}', "gpu-a01", 'expected a JSON object {"commands"'),
        ('{"commands": {"nvidia_smi": null}}', "gpu-a01", "commands.nvidia_smi: unknown command; known:"),
        ('{"commands": {"ibstat": {"rc": "0"}}}', "gpu-a01", "commands.ibstat.rc: expected an integer"),
        ('{"commands": {"ibstat": {"rc": 0, "stdout": 3}}}', "gpu-a01", "stdout and stderr must be strings"),
        ('{"commands": {"ibstat": []}}', "gpu-a01", "commands.ibstat: expected an object"),
        ('{"commands": {}}', "head01", "host 'head01' is not a node of any rack in cluster 'example'"),
    ],
)
def test_evaluate_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], obs_text: str | None, host: str, message: str
) -> None:
    obs = _bad(tmp_path, "obs.json", obs_text) if obs_text is not None else tmp_path / "missing.json"
    assert evaluate(EXAMPLE, host, obs, tmp_path / "out") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ")
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_evaluate_bad_cluster_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _bad(tmp_path, "c.yaml", "apiVersion: gpucluster/v1\nkind: Cluster\n")
    assert evaluate(cluster, "gpu-a01", TESTRACK_OBS, tmp_path) == 2
    assert "c.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("content", [None, "{}", "[1]"])
def test_summarize_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    if content is not None:
        _bad(tmp_path, "gpu-a01.json", content)
    assert main(["summarize", "--reports", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert main(["summarize", "--reports", str(tmp_path / "nope")]) == 2


def test_drain_reason_fits_slurm() -> None:
    long = failed("gpu_model", "x", "y" * 300, 'it\'s "quoted"\nand `multi-line` ≥ ×')
    reason = drain_reason([passed("gpu_count", "8", "8"), long])
    assert reason is not None
    assert len(reason) == DRAIN_REASON_MAX_CHARS
    assert reason.startswith("gpu_model: expected x, found yyy")
    assert reason.endswith("...")
    assert not set("'\"`\n") & set(reason)
    assert reason.isascii()
    assert drain_reason([passed("gpu_count", "8", "8")]) is None


def test_every_catalog_gpu_and_infiniband_fabric_has_a_sourced_threshold() -> None:
    assert set(SINGLE_NODE_BUSBW) == set(GPU_MODELS)
    assert set(MULTI_NODE_BUSBW_PER_PORT) == {k for k, f in FABRICS.items() if f.kind == "infiniband"}
    for figure in [*SINGLE_NODE_BUSBW.values(), *MULTI_NODE_BUSBW_PER_PORT.values()]:
        assert figure.min_busbw_gbs > 0
        assert figure.source.url.startswith("https://")
        assert figure.note


def test_profile_overrides_thresholds_and_dcgm_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = EXAMPLE.read_text().replace(
        "      power_kw: 10.2\n",
        "      power_kw: 10.2\n"
        "      acceptance: {dcgm_level: 3, min_single_node_busbw_gbs: 300, min_multi_node_busbw_gbs: 250}\n",
    )
    declared = declared_for(load_text(text).cluster, "gpu-b01")
    assert (declared.dcgm_level, declared.min_single_node_busbw_gbs, declared.min_multi_node_busbw_gbs) == (
        3,
        300,
        250,
    )
    cluster = _bad(tmp_path, "override.yaml", text)
    assert evaluate(cluster, "gpu-b01", write_obs(tmp_path, "unhealthy"), tmp_path) == 0
    checks = {c["name"]: c for c in json.loads((tmp_path / "gpu-b01.json").read_text())["checks"]}
    assert checks["nccl_single_node"]["status"] == "pass"
    assert checks["nccl_single_node"]["expected"] == "all_reduce busbw ≥ 300 GB/s at ≥ 1 GiB on 8 GPUs"
    assert checks["dcgm_diag"]["expected"] == "dcgmi diag -r 3: no test failed"


def test_python_m_gpucluster_accept_is_an_alias(tmp_path: Path) -> None:
    evaluate(EXAMPLE, "gpu-a01", TESTRACK_OBS, tmp_path)
    runs = [
        subprocess.run(
            [sys.executable, "-m", *module, "summarize", "--reports", str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        for module in (["gpucluster", "accept"], ["gpucluster.accept"])
    ]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stdout.startswith("Acceptance: 0 of 1 nodes passed (example).")
    bad = subprocess.run(
        [sys.executable, "-m", "gpucluster.accept", "summarize", "--reports", str(tmp_path / "nope")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def _playbook_argvs() -> dict[str, list[str]]:
    """The gpucluster command lines ansible/playbooks/accept.yml runs (in its role), keyed by sub-verb."""
    argvs = {}
    for task in [t for tasks in role_tasks.plays().values() for t in role_tasks.flattened(tasks)]:
        argv = role_tasks.argv(task)
        if argv[:2] == ["{{ ansible_playbook_python }}", "-m"] and "gpucluster" in argv[2]:
            verb = argv[4] if argv[2:4] == ["gpucluster", "accept"] else argv[3]
            argvs[verb + (" --fabric" if "--fabric" in argv else "")] = argv
    return argvs


def test_the_acceptance_playbook_runs_the_one_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argvs = _playbook_argvs()
    assert sorted(argvs) == ["evaluate", "evaluate --fabric", "fabric-plan", "skip", "summarize"]
    for argv in argvs.values():
        assert argv[2:4] == ["gpucluster", "accept"], argv
    # The playbook's arguments, with its variables filled in, are what the CLI accepts.
    state, item_state = "__node_acceptance_state.stdout", "__node_acceptance_item_state"
    values = {
        "{{ gpucluster_cluster_file }}": str(EXAMPLE),
        "{{ inventory_hostname }}": "gpu-a01",
        "{{ node_acceptance_report_dir }}": str(tmp_path),
        f"{{{{ {state}.split('|', 1) | first | trim | default('unknown', true) }}}}": "drained",
        f"{{{{ {state}.split('|', 1)[1:] | join | trim }}}}": "gpucluster accept: awaiting",
        "runs job(s) {{ node_acceptance_busy_jobs | join(',') }}; not probed": "runs job(s) 7; not probed",
        "{{ __node_acceptance_candidates | join(',') }}": "gpu-a01,gpu-a02",
        "{{ node_acceptance_fabric_reservation }}": "gpucluster-accept",
        "{{ node_acceptance_fabric_all_reduce_perf }}": "/opt/nccl-tests/build/all_reduce_perf",
        "{{ item }}": "gpu-a01",
        "{{ node_acceptance_fabric_file }}": str(tmp_path / FABRIC_OBSERVATIONS),
        f"{{{{ {item_state}.split('|', 1) | first | trim | default('unknown', true) }}}}": "idle",
        f"{{{{ {item_state}.split('|', 1)[1:] | join | trim }}}}": "",
    }
    (tmp_path / FABRIC_OBSERVATIONS).write_text(json.dumps({"hosts": ["gpu-a01"], "runs": []}))
    shutil.copy(TESTRACK_OBS, tmp_path / "gpu-a01.observations.json")
    for verb in ("fabric-plan", "evaluate", "evaluate --fabric", "skip", "summarize"):
        args = [values.get(a, a) for a in argvs[verb][4:]]
        args = [
            a.replace(
                "{{ node_acceptance_report_dir }}/{{ inventory_hostname }}", f"{tmp_path}/gpu-a01"
            ).replace("{{ node_acceptance_report_dir }}/{{ item }}", f"{tmp_path}/gpu-a01")
            for a in args
        ]
        assert not [a for a in args if "{{" in a], args
        assert cli_main(["accept", *args]) == 0, capsys.readouterr().err
    assert (tmp_path / "gpu-a01.json").is_file() and (tmp_path / "summary.md").is_file()
