"""slurm_node's plan: what a converge does on a node, from its devices, gres.conf, slurmd and the controller.

Rendered through the role's own vars (inputs, node files, gpucluster.cluster.slurm_node_plan) by Ansible's
templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpucluster import names
from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import ROCKY, file_entry, node_state, role_expression
from tests.conftest import ROOT

ROLE = "slurm_node"
PIN = "24.11.5"
HOST = "h100-001"
GRES = "/etc/slurm/gres.conf"
DEVICES = [f"/dev/nvidia{n}" for n in range(8)]
NODE = {
    "inventory_hostname": HOST,
    "slurm_common_controller_host": "ctl",
    "hostvars": {"ctl": {"slurm_common_package_version": f"{PIN}-1"}, HOST: {}},
    "slurm_common_slurm_version": PIN,
    "slurm_common_slurm_packages": {"slurmd": "slurmd"},
    "slurm_common_package_version": f"{PIN}-1",
    "gpucluster_cluster_file": "clusters/onprem-only.yaml",
    "slurm_node_gpu_devices": DEVICES,
}


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **{**NODE, **overrides})


FILES: list[dict[str, Any]] = _expression("__slurm_node_files")
GRES_TEXT: str = FILES[0]["content"]
HEALTH_JSON = next(f for f in FILES if f["path"] == "health/health.json")
PROGRAM = names.HEALTH_PROGRAM
PROGRAM_TEXT = (ROOT / "gpucluster" / "health" / "node_program.py").read_text()


def _node(**change: Any) -> dict[str, Any]:
    """A converged GPU node (slurmd at the pin, held and running, gres.conf current), `change` applied."""
    files: dict[str, Any] = {
        "/var/spool/slurmd": file_entry(kind="directory", mode="0755"),
        GRES: file_entry(GRES_TEXT),
        HEALTH_JSON["dest"]: file_entry(HEALTH_JSON["content"]),
        PROGRAM: file_entry(PROGRAM_TEXT, mode="0755"),
        **{device: file_entry(kind="file") for device in DEVICES},
        **change.get("files", {}),
    }
    state = node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=change.get("installed", {"slurmd": f"{PIN}-1"}),
        held=change.get("held", ["slurmd"]),
        services={"slurmd": change.get("slurmd", (True, True))},
    )
    state["texts"] = {GRES: change.get("gres", GRES_TEXT)}
    return state


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__slurm_node_plan", __slurm_node_state=state, **overrides)
    return plan


def test_a_converged_node_has_nothing_to_do_and_runs_one_task() -> None:
    plan = _plan(_node())
    assert (plan["pending"], plan["todo"], plan["failed"], plan["installed_before"]) == ([], False, [], True)
    assert not include_runs(ROLE, _node(), **NODE)


def test_the_role_reads_itself_without_the_shared_read_after_a_change_or_the_controllers_version() -> None:
    assert include_runs(ROLE, None, **NODE)
    assert include_runs(ROLE, _node(), **NODE, __gpucluster_node_changed=True)
    assert include_runs(ROLE, _node(), **{**NODE, "hostvars": {"ctl": {}, HOST: {}}})


@pytest.mark.parametrize(
    ("change", "pending"),
    [
        ({"files": {"/var/spool/slurmd": None}}, ["spool directory"]),
        # the program the rendered Prolog runs, at gpucluster.names.HEALTH_PROGRAM: missing, or another copy
        ({"files": {PROGRAM: None}}, ["health program"]),
        ({"files": {PROGRAM: file_entry(PROGRAM_TEXT + "# edited\n", mode="0755")}}, ["health program"]),
        ({"held": []}, ["slurmd package"]),
        ({"installed": {"slurmd": "22.05.8-4"}}, ["slurmd package"]),
        ({"slurmd": (False, True)}, ["slurmd service"]),
        (
            {"installed": {}, "held": [], "slurmd": (False, False)},
            ["acceptance hold", "slurmd package", "slurmd service"],
        ),
    ],
    ids=str,
)
def test_each_difference_pends_its_own_step(change: dict[str, Any], pending: list[str]) -> None:
    assert _plan(_node(**change))["pending"] == pending


def test_a_new_node_is_not_held_where_acceptance_is_off() -> None:
    state = _node(installed={}, held=[])
    assert _plan(state, slurm_node_hold_for_acceptance=False)["pending"] == ["slurmd package"]


def test_rocky_needs_no_apt_hold() -> None:
    assert _plan(_node(held=[]), facts=ROCKY)["pending"] == []


@pytest.mark.parametrize(
    ("own", "actions", "handlers"),
    [
        ("File=/dev/nvidia[0-3]", ["slurmd-drain-restart"], ["Restart slurmd"]),
        ("", [], []),
    ],
)
def test_gres_conf_restarts_slurmd_only_where_the_nodes_own_lines_changed(
    own: str, actions: list[str], handlers: list[str]
) -> None:
    """A change of this node's lines restarts its slurmd (drained); another group's lines change nothing."""
    old = (
        GRES_TEXT.replace("File=/dev/nvidia[0-7]", own, 1)
        if own
        else GRES_TEXT.replace("a100-[01-08]", "a100-[01-04]")
    )
    plan = _plan(_node(files={GRES: file_entry(old)}, gres=old))
    assert plan["pending"] == ["node files"]
    (change,) = plan["node files"]
    assert change["actions"] == actions
    names = _expression("__slurm_node_names")
    assert [names["handlers"][a] for a in change["actions"] if names["handlers"].get(a)] == handlers


@pytest.mark.parametrize(
    ("controller", "slurmctld_v", "message"),
    [
        (
            "23.11.4-1",
            "",
            f"slurmd {PIN} on {HOST} would be newer than slurmctld 23.11.4 on ctl; converge the controller"
            " first (ansible-playbook … --limit ctl).",
        ),
        (
            None,
            "slurm 23.02.7\n",
            f"slurmd {PIN} on {HOST} would be newer than slurmctld 23.02.7 on ctl; converge the controller"
            " first (ansible-playbook … --limit ctl).",
        ),
        (
            None,
            "",
            f"slurmd {PIN} on {HOST} would be newer than slurmctld (not installed) on ctl; converge the"
            " controller first (ansible-playbook … --limit ctl).",
        ),
    ],
)
def test_a_slurmd_newer_than_slurmctld_is_refused(
    controller: str | None, slurmctld_v: str, message: str
) -> None:
    hostvars = {"ctl": {"slurm_common_package_version": controller} if controller else {}, HOST: {}}
    plan = _plan(_node(), hostvars=hostvars, __slurm_node_slurmctld_v={"stdout": slurmctld_v})
    assert (plan["failed"], plan["pending"], plan["todo"]) == ([message], [], True)


def test_an_epoch_controller_and_a_newer_controller_pass() -> None:
    for version in (f"1:{PIN}-2", "25.05.1-1"):
        assert (
            _plan(_node(), hostvars={"ctl": {"slurm_common_package_version": version}, HOST: {}})["failed"]
            == []
        )
    assert (
        _plan(
            _node(), hostvars={"ctl": {}, HOST: {}}, __slurm_node_slurmctld_v={"stdout": "slurm 24.11.5\n"}
        )["failed"]
        == []
    )


def test_a_missing_declared_gpu_is_refused() -> None:
    plan = _plan(_node(files={"/dev/nvidia3": None, "/dev/nvidia7": None}))
    assert plan["failed"] == [
        f"{HOST} lacks declared GPU device(s) /dev/nvidia3, /dev/nvidia7: the hardware profile declares 8"
        " GPUs; fix the node or its profile."
    ]
    assert include_runs(ROLE, _node(files={"/dev/nvidia3": None}), **NODE)


def test_the_read_names_every_packagings_slurmd_and_the_devices() -> None:
    assert _expression("slurm_node_node_query") == {
        "packages": True,
        "package_names": ["*slurmd"],
        "paths": ["/var/spool/slurmd", GRES, HEALTH_JSON["dest"], PROGRAM, *DEVICES],
        "read": [GRES, HEALTH_JSON["dest"]],
        "services": ["slurmd"],
    }


def test_the_node_image_plans_the_package_without_a_controller() -> None:
    state = node_state()
    image = {
        "__slurm_node_image": True,
        "__slurm_node_files": [],
        "hostvars": {HOST: {}},
        "slurm_node_gpu_devices": [],
    }
    plan = _plan(state, **image)
    assert (plan["failed"], "slurmd package" in plan["pending"]) == ([], True)
    assert role_expression(ROLE, "lookup('ansible.builtin.template', 'configless.conf.j2')") == (
        "[Unit]\nConditionPathExists=\n"
    )


def test_converge_reads_checks_and_includes_the_steps_only_where_one_is_pending() -> None:
    assert converge_steps(ROLE, _node(), **NODE, __gpucluster_node_changed=True) == [
        "Read the node's GPU devices, slurmd files, packages and service",
    ]
    assert converge_steps(ROLE, _node(held=[]), **NODE, __gpucluster_node_changed=True)[-1] == (
        "Install slurmd, write gres.conf and start slurmd where they differ"
    )
