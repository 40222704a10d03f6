"""Ansible side without a rack: inventory plugin, role metadata, syntax check, ansible-lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import CLUSTER_FILES, ROOT

BIN = Path(sys.executable).parent
ROLES = sorted(p for p in (ROOT / "ansible" / "roles").iterdir() if p.is_dir())


def _ansible(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_inventory_graph_of_the_example() -> None:
    result = _ansible("ansible-inventory", "-i", "clusters/example.yaml", "--graph")
    assert result.returncode == 0, result.stderr
    assert "@slurm_controller:" in result.stdout and "head01" in result.stdout
    assert "@rack_rack_a:" in result.stdout and "gpu-a04" in result.stdout


def test_inventory_host_variables_come_from_the_cluster_file() -> None:
    result = _ansible("ansible-inventory", "-i", "clusters/onprem-only.yaml", "--list")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    detail = _ansible("ansible-inventory", "-i", "clusters/onprem-only.yaml", "--host", "h100-016")
    host = json.loads(detail.stdout)
    assert host["ansible_host"] == "192.168.1.16"
    assert host["slurm_common_controller_host"] == "ctl01"
    assert len(host["slurm_node_gpu_devices"]) == 8
    assert listing["slurm_accounting"]["hosts"] == ["db01"]
    assert "a100-08" in listing["profile_dgx_a100"]["hosts"]


def test_inventory_rejects_a_bad_cluster_file_with_its_path() -> None:
    bad = ROOT / "tests" / "clusterfile" / "malformed" / "controller-undeclared.yaml"
    result = _ansible("ansible-inventory", "-i", str(bad), "--list")
    assert result.returncode != 0
    assert "controller-undeclared.yaml" in result.stderr and "slurm.controller" in result.stderr


def test_cloud_only_cluster_has_no_rack_hosts() -> None:
    result = _ansible("ansible-inventory", "-i", "clusters/cloud-only.yaml", "--list")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["_meta"]["hostvars"] == {}


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=[p.stem for p in CLUSTER_FILES])
def test_site_playbook_syntax(path: Path) -> None:
    result = _ansible("ansible-playbook", "-i", str(path), "ansible/site.yml", "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_role_variable_is_documented(role: Path) -> None:
    """Each default is an option of an entry point (`main`, or the `tasks_from` one that reads it)."""
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = {
        name: option for spec in specs.values() for name, option in (spec.get("options") or {}).items()
    }
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    assert set(defaults) <= set(options), f"undocumented: {set(defaults) - set(options)}"
    assert all(name.startswith(role.name + "_") for name in options)
    assert all(option.get("description") for option in options.values())


def test_ansible_lint_production_profile() -> None:
    result = _ansible("ansible-lint", "--profile", "production", "--nocolor", "ansible/")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_playbooks_target_only_the_groups_the_inventory_makes() -> None:
    """Playbook host patterns name groups from gpucluster.names, which the inventory plugin creates."""
    from gpucluster import names

    made = {value for key, value in vars(names).items() if key.endswith("_GROUP")}
    listing = json.loads(_ansible("ansible-inventory", "-i", "clusters/example.yaml", "--list").stdout)
    assert made - {names.SUBNET_MANAGER_GROUP} <= set(listing), made - set(listing)
    # image.yml runs on an image build host given with -i HOST, never on the cluster's inventory.
    playbooks = (ROOT / "ansible" / "playbooks").glob("*.yml")
    cluster_playbooks = sorted(p for p in playbooks if p.name != "image.yml")
    for playbook in cluster_playbooks:
        for play in yaml.safe_load(playbook.read_text()):
            for pattern in str(play["hosts"]).split(":"):
                assert pattern.lstrip("!&") in made, f"{playbook.name}: {pattern}"
