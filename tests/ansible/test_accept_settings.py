"""accept.yml probes each node with its profile's acceptance settings, through the real inventory.

The playbook, and through it the node_acceptance role's probe tasks, runs for real (`--tags probe`:
probe and save the observations, no verdict, no Slurm) against one node over a local connection. Every
probe command is shadowed by a stub on PATH that records its argv and exits 127, so nothing on this
machine is probed or changed; the NCCL probe's absolute path does not exist here and exits 127 by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster.accept.observations import load_observations
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
PLAYBOOK = ROOT / "ansible" / "playbooks" / "accept.yml"
NCCL_TESTS = Path("/opt/nccl-tests/build/all_reduce_perf")
# Everything accept.yml may call by name, including what it delegates to the Slurm controller.
STUBBED = ("nvidia-smi", "dcgmi", "systemctl", "ibstat", "lsmod", "lspci", "scontrol", "sudo")
# What the controller answers for an idle node in service: no jobs, state idle, no reason.
SLURM_ANSWERS = {"squeue": "", "sinfo": "idle|none"}


def _stubs(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH starts with recording stubs, and the file they record into."""
    stubs, ran = tmp_path / "bin", tmp_path / "ran.log"
    stubs.mkdir()
    for name in STUBBED:
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{ran}"\necho "{name}: stub" >&2\nexit 127\n')
        stub.chmod(0o755)
    for name, answer in SLURM_ANSWERS.items():
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{ran}"\nprintf "%s" "{answer}"\n')
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1"}
    return env, ran


def _probe(inventory: Path, host: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run accept.yml's probe tasks on `host` locally; return the run and the report directory."""
    env, _ = _stubs(tmp_path)
    out = tmp_path / "out"
    result = subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            str(inventory),
            str(PLAYBOOK),
            "--limit",
            host,
            "--tags",
            "probe",
            "-e",
            "ansible_connection=local",
            "-e",
            "ansible_become=false",  # sudo would reset PATH and bypass the stubs
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-e",
            f"node_acceptance_report_dir={out}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )
    return result, out


def _cluster_file(tmp_path: Path, acceptance: dict[str, Any]) -> Path:
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    data["onprem"]["profiles"]["dgx-h100"]["acceptance"] = acceptance
    path = tmp_path / "accept-settings.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.skipif(NCCL_TESTS.exists(), reason=f"{NCCL_TESTS} is installed here: the probe would really run")
def test_probes_use_the_profile_dcgm_level_and_nccl_size(tmp_path: Path) -> None:
    inventory = _cluster_file(tmp_path, {"dcgm_level": 3, "nccl_test_size": "4G"})
    result, out = _probe(inventory, "gpu-a01", tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    saved = out / "gpu-a01.observations.json"
    commands = json.loads(saved.read_text())["commands"]
    assert commands["dcgm_diag"]["cmd"] == "dcgmi diag -r 3 -j"
    assert commands["nccl_single"]["cmd"] == f"{NCCL_TESTS} -b 4G -e 4G -f 2 -g 8"
    ran = (tmp_path / "ran.log").read_text().splitlines()
    assert "dcgmi diag -r 3 -j" in ran
    assert not [line for line in ran if line.split()[0] in ("scontrol", "sudo")]  # nothing changes in Slurm
    assert "squeue --noheader --nodelist=gpu-a01 --format=%A" in ran  # a node with jobs is not probed
    assert load_observations(saved).get("dcgm_diag") is not None  # the contract takes the extra `cmd`


def test_a_node_without_acceptance_settings_is_an_error(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[slurm_compute]\ngpu-x01 gpucluster_cluster_name=x\n")
    result, out = _probe(inventory, "gpu-x01", tmp_path)
    assert result.returncode != 0
    assert "gpucluster_accept_dcgm_level" in result.stdout + result.stderr
    assert "run with the cluster file as the inventory" in result.stdout + result.stderr  # the role's hint
    assert not (tmp_path / "ran.log").exists(), "a probe ran without its settings"
    assert not (out / "gpu-x01.observations.json").exists()
