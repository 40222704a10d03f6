"""gpucluster.cluster.role_arguments: several roles' argument specs checked in one task, as in each role."""

from __future__ import annotations

import json
import subprocess

import yaml

from tests.ansible.adhoc import run_module
from tests.conftest import ROOT

SITE = ROOT / "ansible" / "playbooks" / "site.yml"
COMPUTE_ROLES = ["gpucluster.cluster.slurm_node", "gpucluster.cluster.gpu_nccl"]


def _check(roles: list[str], **variables: object) -> subprocess.CompletedProcess[str]:
    arguments = {"roles": roles}
    return run_module("gpucluster.cluster.role_arguments", arguments, "-o", "-e", json.dumps(variables))


def test_a_required_option_the_role_defaults_is_met_without_the_variable() -> None:
    # slurm_node_cluster_file is required by the spec and set by the role's defaults from the inventory.
    result = _check(COMPUTE_ROLES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"changed": false' in result.stdout


def test_a_wrong_value_fails_naming_the_role_and_the_option() -> None:
    result = _check(COMPUTE_ROLES, slurm_node_slurmd_port="not-a-port", gpu_nccl_install_mode="sideways")
    assert result.returncode != 0
    assert "gpucluster.cluster.slurm_node: argument 'slurm_node_slurmd_port' is of type" in result.stdout
    assert "gpucluster.cluster.gpu_nccl: value of gpu_nccl_install_mode must be one of" in result.stdout


def test_a_value_of_the_right_type_passes_and_an_unknown_role_fails() -> None:
    assert _check(COMPUTE_ROLES, slurm_node_slurmd_port=6818).returncode == 0
    unknown = _check(["gpucluster.cluster.no_such_role"])
    assert unknown.returncode != 0 and "no_such_role" in unknown.stdout


def test_every_role_the_site_imports_unvalidated_is_checked_first_in_its_play() -> None:
    for play in yaml.safe_load(SITE.read_text()):
        unvalidated = [
            task["ansible.builtin.import_role"]["name"]
            for task in play.get("tasks", [])
            if task.get("ansible.builtin.import_role", {}).get("rolespec_validate") is False
        ]
        if not unvalidated:
            continue
        checked = [
            role
            for task in play.get("pre_tasks", [])
            for role in task.get("gpucluster.cluster.role_arguments", {}).get("roles", [])
        ]
        assert sorted(unvalidated) == sorted(checked), play["name"]
