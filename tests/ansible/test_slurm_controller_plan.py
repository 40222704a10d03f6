"""slurm_controller's plan: its install and configure steps, from the pin, accounting, power and the state.

Rendered through the role's own vars (inputs, node files, gpucluster.cluster.slurm_controller_plan) by
Ansible's templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.role_vars import ROCKY, file_entry, node_state, role_expression

ROLE = "slurm_controller"
PIN = "24.11.5"
GRES = "/etc/slurm/gres.conf"
STATE_DIR = "/var/spool/slurmctld"
CONTROLLER = {
    "inventory_hostname": "ctl",
    "gpucluster_cluster_name": "onprem",
    "gpucluster_cluster_file": "clusters/onprem-only.yaml",
    "slurm_common_slurm_version": PIN,
    "slurm_common_slurm_packages": {"slurmctld": "slurmctld", "slurmdbd": "slurmdbd"},
    "slurm_common_package_version": f"{PIN}-1",
}


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **{**CONTROLLER, **overrides})


FILES: list[dict[str, Any]] = _expression("__slurm_controller_files")
GRES_TEXT: str = next(record["content"] for record in FILES if record["dest"] == GRES)


PASSWORD = "/etc/slurm/slurmdbd.dbpass"
UNITS = ("slurmctld", "mariadb", "slurmdbd")


def _controller(**change: Any) -> dict[str, Any]:
    """A converged controller (daemons at the pin and held, state directory, gres.conf, MariaDB, the password,
    the three units running), `change` applied."""
    state_dir = {**file_entry(kind="directory", mode="0700"), "owner": "slurm", "group": "slurm"}
    files: dict[str, Any] = {
        STATE_DIR: state_dir,
        GRES: file_entry(GRES_TEXT),
        PASSWORD: file_entry(kind="file", mode="0600"),
        **change.get("files", {}),
    }
    state = node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=change.get(
            "installed",
            {**dict.fromkeys(["slurmctld", "slurmdbd"], f"{PIN}-1"), "mariadb-server": "1:10.11.6"},
        ),
        held=change.get("held", ["slurmctld", "slurmdbd"]),
        services=change.get("services", dict.fromkeys(UNITS, (True, True))),
    )
    state["texts"] = {GRES: change.get("gres", GRES_TEXT)}
    return state


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__slurm_controller_plan", __slurm_controller_state=state, **overrides)
    return plan


def test_a_converged_controller_has_nothing_to_install_or_write() -> None:
    plan = _plan(_controller())
    assert (plan["pending"], plan["todo"]) == ([], False)


@pytest.mark.parametrize(
    ("change", "pending"),
    [
        ({"files": {STATE_DIR: file_entry(kind="directory", mode="0700")}}, ["state directory"]),
        ({"held": ["slurmctld"]}, ["daemons"]),
        (
            {"installed": {"slurmctld": f"{PIN}-1", "slurmdbd": "22.05.8-4", "mariadb-server": "1"}},
            ["daemons"],
        ),
        ({"installed": {"slurmctld": f"{PIN}-1", "mariadb-server": "1"}}, ["daemons"]),
        ({"installed": dict.fromkeys(["slurmctld", "slurmdbd"], f"{PIN}-1")}, ["database"]),
        ({"files": {PASSWORD: None}}, ["password"]),
        (
            {"services": {"slurmctld": (False, True), "mariadb": (True, True), "slurmdbd": (True, True)}},
            ["slurmctld"],
        ),
        (
            {"services": {"slurmctld": (True, True), "mariadb": (True, False), "slurmdbd": (True, True)}},
            ["mariadb"],
        ),
        ({"services": {"slurmctld": (True, True), "mariadb": (True, True)}}, ["slurmdbd"]),
    ],
    ids=str,
)
def test_each_difference_pends_its_own_step(change: dict[str, Any], pending: list[str]) -> None:
    assert _plan(_controller(**change))["pending"] == pending


def test_without_accounting_slurmdbd_is_neither_read_nor_installed() -> None:
    state = _controller(installed={"slurmctld": f"{PIN}-1"}, held=["slurmctld"])
    assert _plan(state, slurm_controller_accounting_enabled=False)["pending"] == []
    names = _expression("__slurm_controller_names", slurm_controller_accounting_enabled=False)
    assert names["daemons"] == names["read"]["package_names"] == ["slurmctld"]
    assert names["read"]["services"] == ["slurmctld"] and PASSWORD not in names["read"]["paths"]
    # Nothing of accounting is planned, whatever the node holds of it.
    bare = _controller(files={PASSWORD: None}, services={"slurmctld": (True, True)})
    assert _plan(bare, slurm_controller_accounting_enabled=False)["pending"] == []


def test_a_converged_controller_reads_the_accounting_units_and_files_it_checks() -> None:
    read = _expression("__slurm_controller_names.read")
    assert read["services"] == ["slurmctld", "mariadb", "slurmdbd"]
    assert {PASSWORD, "/etc/slurm/slurmdbd.conf"} <= set(read["paths"])
    assert "mariadb-server" in read["package_names"]


def test_dnf_installs_on_every_converge() -> None:
    assert _plan(_controller(held=[]), facts=ROCKY)["pending"] == ["daemons", "database"]


def test_the_power_programs_directory_only_with_cloud_capacity() -> None:
    assert _plan(_controller(), slurm_controller_power_enabled=True)["pending"] == ["config directory"]
    directory = {**file_entry(kind="directory", mode="0750"), "group": "slurm"}
    state = _controller(files={"/etc/gpucluster": directory})
    assert _plan(state, slurm_controller_power_enabled=True)["pending"] == []


def test_a_gpu_nodes_gres_lines_change_the_controllers_copy_without_a_restart() -> None:
    """No slurmd on the controller: its gres.conf (served to configless nodes) is written, no restart."""
    old = GRES_TEXT.replace("File=/dev/nvidia[0-7]", "File=/dev/nvidia[0-3]", 1)
    plan = _plan(_controller(files={GRES: file_entry(old)}, gres=old))
    assert plan["pending"] == ["node files"]
    assert [(change["dest"], change["actions"]) for change in plan["node files"]] == [(GRES, [])]
    assert _expression("__slurm_controller_names.handlers") == {
        "reconfigure": "Reconfigure Slurm",
        "slurmctld-restart": "Restart slurmctld",
        "slurmd-drain-restart": "Reconfigure Slurm",
    }


def test_the_power_programs_keep_their_paths() -> None:
    assert (_expression("__slurm_controller_power_venv"), _expression("__slurm_controller_power_wheels")) == (
        "/opt/gpucluster",
        "/var/cache/gpucluster/wheels",
    )


ROUTED = {"gpucluster_cluster_file": "clusters/example.yaml", "inventory_hostname": "head01"}
ROUTING_UNITS = (
    "/etc/systemd/system/gpucluster-routing.service",
    "/etc/systemd/system/gpucluster-routing.timer",
)


def _converged_with(records: list[dict[str, Any]], **edited: str) -> dict[str, Any]:
    """A converged controller holding every record's file, the texts in `edited` (dest: text) instead."""
    files = {
        record["dest"]: {
            **file_entry(edited.get(record["dest"], record["content"]), mode=record["mode"]),
            "owner": record["owner"],
            "group": record["group"],
        }
        for record in records
    }
    state_dir = {**file_entry(kind="directory", mode="0700"), "owner": "slurm", "group": "slurm"}
    config_dir = {**file_entry(kind="directory", mode="0750"), "group": "slurm"}
    password = file_entry(kind="file", mode="0600")
    state = node_state(
        files={STATE_DIR: state_dir, "/etc/gpucluster": config_dir, PASSWORD: password, **files},
        installed={**dict.fromkeys(["slurmctld", "slurmdbd"], f"{PIN}-1"), "mariadb-server": "1:10.11.6"},
        held=["slurmctld", "slurmdbd"],
        services=dict.fromkeys(UNITS, (True, True)),
    )
    state["texts"] = {record["dest"]: edited.get(record["dest"], record["content"]) for record in records}
    return state


def test_a_routing_section_brings_the_burst_controller_and_its_programs_even_without_power() -> None:
    records: list[dict[str, Any]] = _expression("__slurm_controller_files", **ROUTED)
    dests = {record["dest"] for record in records}
    assert {"/etc/slurm/job_submit.lua", "/etc/gpucluster/routing.json", *ROUTING_UNITS} <= dests
    names = _expression("__slurm_controller_names", slurm_controller_power_enabled=False, **ROUTED)
    assert (names["routing"], names["programs"]) == (True, True)
    plan = _plan(_converged_with(records), slurm_controller_power_enabled=False, **ROUTED)
    assert (plan["pending"], plan["routing units"]) == ([], [])
    # Without its directory, routing.json has nowhere to go: the directory is planned without power too.
    missing_dir = _converged_with(records)
    missing_dir["files"]["/etc/gpucluster"] = {"exists": False}
    assert "config directory" in _plan(missing_dir, slurm_controller_power_enabled=False, **ROUTED)["pending"]


def test_only_a_changed_unit_reloads_systemd_and_restarts_the_timer() -> None:
    records: list[dict[str, Any]] = _expression("__slurm_controller_files", **ROUTED)
    timer = ROUTING_UNITS[1]
    old = next(record["content"] for record in records if record["dest"] == timer).replace("=60", "=120")
    plan = _plan(_converged_with(records, **{timer: old}), **ROUTED)
    assert (plan["pending"], plan["routing units"]) == (["node files", "routing units"], [timer])
    lua = "/etc/slurm/job_submit.lua"
    plan = _plan(_converged_with(records, **{lua: "-- by hand\n"}), **ROUTED)
    assert ([change["dest"] for change in plan["node files"]], plan["routing units"]) == ([lua], [])


def test_without_a_routing_section_no_burst_controller() -> None:
    names = _expression("__slurm_controller_names")
    assert (names["routing"], names["programs"]) == (False, False)
    assert _plan(_controller())["routing units"] == []
