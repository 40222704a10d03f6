"""Review of changes under ansible/: the collection's own playbooks and handlers decide where a changed
role runs and the most it may need; the example cluster's inventory decides the hosts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpucluster.ansible_vars import inventory
from gpucluster.clusterfile import Cluster
from gpucluster.review.findings import Finding
from gpucluster.review.roles import classify_roles, hosts_of, role_changes
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def groups(example: Cluster) -> dict[str, list[str]]:
    return inventory(example, "clusters/example.yaml").groups


def _review(tree: Path, groups: dict[str, list[str]], *paths: str) -> dict[str, Finding]:
    findings = classify_roles(role_changes(tree, list(paths), groups))
    return {f.title.split(" changed:")[0].removeprefix("Ansible "): f for f in findings}


def test_each_role_runs_where_site_yml_puts_it_and_may_do_what_its_handlers_do(
    groups: dict[str, list[str]],
) -> None:
    found = _review(
        ROOT,
        groups,
        "ansible/roles/slurm_node/tasks/main.yml",
        "ansible/roles/slurm_node/defaults/main.yml",
        "ansible/roles/gpu_nvidia_driver/tasks/main.yml",
        "ansible/roles/slurm_controller/templates/gpucluster-reconcile.timer.j2",
        "ansible/roles/gpu_dcgm/defaults/main.yml",
    )
    compute, controller = groups["slurm_compute"], groups["slurm_controller"]
    node = found["role slurm_node"]
    assert (node.kind, sorted(node.hosts)) == ("slurmd-restart", sorted(compute))
    assert node.detail[:2] == [
        "changed: ansible/roles/slurm_node/defaults/main.yml",
        "changed: ansible/roles/slurm_node/tasks/main.yml",
    ]
    assert "writes node files: /etc/slurm/gres.conf, /etc/gpucluster/health.json" in node.detail
    assert any("cloud node image" in line for line in node.detail)
    driver = found["role gpu_nvidia_driver"]
    assert (driver.kind, len(driver.hosts)) == ("reboot", len(compute))
    ctl = found["role slurm_controller"]
    assert sorted(ctl.hosts) == sorted(set(controller + groups["slurm_accounting"]))
    assert "restarts slurmdbd" in ctl.title and ctl.kind == "in-place"
    # The example's routing section adds job_submit.lua, routing.json and the burst controller's units.
    assert (
        "writes node files: /etc/slurm/gres.conf, /etc/gpucluster/power.json, /etc/slurm/job_submit.lua,"
        " /etc/gpucluster/routing.json, /etc/systemd/system/gpucluster-routing.service,"
        " /etc/systemd/system/gpucluster-routing.timer"
    ) in ctl.detail
    assert (
        found["role gpu_dcgm"].kind == "in-place" and "restarts nvidia-dcgm" in found["role gpu_dcgm"].title
    )


def test_a_playbook_runs_on_its_own_plays_hosts(groups: dict[str, list[str]]) -> None:
    found = _review(ROOT, groups, "ansible/playbooks/accept.yml", "ansible/playbooks/image.yml")
    assert sorted(found["playbook accept.yml"].hosts) == sorted(groups["slurm_compute"])
    assert found["playbook image.yml"].hosts == []
    assert any("cloud node image" in line for line in found["playbook image.yml"].detail)


def test_a_role_a_playbook_imports_runs_on_that_playbook_s_hosts(groups: dict[str, list[str]]) -> None:
    """accept.yml's plays import node_acceptance's entry points: a change to the role runs where they do."""
    found = _review(ROOT, groups, "ansible/roles/node_acceptance/tasks/fabric.yml")
    acceptance = found["role node_acceptance"]
    assert sorted(acceptance.hosts) == sorted(groups["slurm_compute"])
    assert "runs on" in acceptance.title and "(slurm_compute)" in acceptance.title, acceptance.title
    assert acceptance.kind == "in-place" and not any("cloud node image" in line for line in acceptance.detail)


def test_a_role_another_role_includes_runs_and_may_do_what_the_including_role_does(
    groups: dict[str, list[str]],
) -> None:
    """gpu_nvidia_driver includes node_reboot (slot, reboot, record): a change to it reboots GPU nodes."""
    found = _review(ROOT, groups, "ansible/roles/node_reboot/tasks/main.yml")
    reboot = found["role node_reboot"]
    assert (reboot.kind, sorted(reboot.hosts)) == ("reboot", sorted(groups["slurm_compute"])), reboot
    assert any("cloud node image" in line for line in reboot.detail)  # image.yml's driver install records


def test_the_impact_follows_the_role_s_handlers(tmp_path: Path, groups: dict[str, list[str]]) -> None:
    tree = tmp_path / "head"
    shutil.copytree(ROOT / "ansible", tree / "ansible")
    handlers = tree / "ansible" / "roles" / "gpu_dcgm" / "handlers" / "main.yml"
    handlers.write_text(
        handlers.read_text()
        + "\n- name: Restart slurmd\n  ansible.builtin.service:\n    name: slurmd\n    state: restarted\n"
    )
    assert (
        _review(tree, groups, "ansible/roles/gpu_dcgm/tasks/main.yml")["role gpu_dcgm"].kind
        == "slurmd-restart"
    )


def test_host_patterns() -> None:
    groups = {"a": ["h1", "h2"], "b": ["h2", "h3"]}
    assert hosts_of("a:b", groups) == ["h1", "h2", "h3"]
    assert hosts_of("a:!b", groups) == ["h1"]
    assert hosts_of("a:&b", groups) == ["h2"]
    assert hosts_of("{{ image_hosts }}", groups) == []
