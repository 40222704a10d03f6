"""gpu_dcgm's plan: what a converge does on a node, from its pins, install mode and the node state.

Rendered through the role's own vars (inputs, template bodies, gpucluster.cluster.gpu_dcgm_plan) by
Ansible's templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import ROCKY, file_entry, node_state, role_expression

ROLE = "gpu_dcgm"
SOURCES = "/etc/apt/sources.list.d/cuda.sources"
PREFERENCES = "/etc/apt/preferences.d/gpucluster-dcgm.pref"
UNIT = "/etc/systemd/system/dcgm-exporter.service"
COUNTERS = "/etc/dcgm-exporter/gpucluster-counters.csv"
ENGINE = ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13"]
EXPORTER = "datacenter-gpu-manager-exporter"
RUNNING = {"nvidia-dcgm": (True, True), "dcgm-exporter": (True, True)}


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **overrides)


def _node(mode: str = "full", **change: Any) -> dict[str, Any]:
    """A node converged to DCGM 4.4.2 in `mode`, with `change` applied (files, installed, held, services)."""
    full = mode == "full"
    files = {
        SOURCES: file_entry("Types: deb\n"),
        PREFERENCES: file_entry(_expression("__gpu_dcgm_bodies.preferences", gpu_dcgm_install_mode=mode)),
        **({UNIT: file_entry(_expression("__gpu_dcgm_bodies.exporter_unit"))} if full else {}),
        **({COUNTERS: file_entry(_expression("__gpu_dcgm_bodies.counters"))} if full else {}),
        **change.get("files", {}),
    }
    packages = ENGINE + ([EXPORTER] if full else [])
    installed = change.get("installed", packages)
    return node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=dict.fromkeys(installed, "1:4.4.2-1"),
        held=change.get("held", installed),
        services=change.get("services", RUNNING if full else {}),
    )


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__gpu_dcgm_plan", __gpu_dcgm_state=state, **overrides)
    return plan


@pytest.mark.parametrize("mode", ["full", "userspace"])
def test_a_converged_node_has_nothing_to_do_and_runs_one_task(mode: str) -> None:
    plan = _plan(_node(mode), gpu_dcgm_install_mode=mode)
    assert (plan["pending"], plan["todo"], plan["failed"], plan["skipped"]) == ([], False, [], "")
    assert not include_runs(ROLE, _node(mode), gpu_dcgm_install_mode=mode)


@pytest.mark.parametrize("missing", [*ENGINE, EXPORTER])
def test_a_missing_package_is_installed(missing: str) -> None:
    installed = [name for name in [*ENGINE, EXPORTER] if name != missing]
    # A missing package is not held either: the hold runs after the install.
    assert _plan(_node(installed=installed, held=installed))["pending"] == ["install", "hold"]


def test_a_new_pin_rewrites_the_preferences_and_installs() -> None:
    old = _expression("__gpu_dcgm_bodies.preferences", gpu_dcgm_version="4.4.1")
    assert _plan(_node(files={PREFERENCES: file_entry(old)}))["pending"] == ["install"]


def test_an_unheld_package_is_held_and_after_an_install_that_changed_all_are() -> None:
    plan = _plan(_node(held=ENGINE))
    assert (plan["pending"], plan["hold"]) == (["hold"], [EXPORTER])
    again = _plan(_node(), __gpu_dcgm_install={"changed": True})
    assert again["hold"] == [*ENGINE, EXPORTER]


def test_a_different_exporter_unit_is_rewritten() -> None:
    edited = file_entry("[Service]\nExecStart=/usr/bin/dcgm-exporter\n")
    assert _plan(_node(files={UNIT: edited}))["pending"] == ["unit"]
    assert _plan(_node(files={UNIT: None}))["pending"] == ["unit"]


def test_a_missing_or_edited_counters_file_is_rewritten_and_the_unit_names_it_and_the_job_mapping() -> None:
    assert _plan(_node(files={COUNTERS: None}))["pending"] == ["counters"]
    assert _plan(_node(files={COUNTERS: file_entry("DCGM_FI_DEV_GPU_TEMP, gauge, t\n")}))["pending"] == [
        "counters"
    ]
    assert COUNTERS in _expression("__gpu_dcgm_names")["read"]["paths"]
    unit = _expression("__gpu_dcgm_bodies.exporter_unit", gpu_dcgm_job_mapping_dir="/run/x")
    assert f"--collectors {COUNTERS} " in unit and unit.rstrip().count("--hpc-job-mapping-dir /run/x") == 1


def test_the_counters_file_collects_engine_activity_occupancy_xid_and_ecc() -> None:
    fields = {
        line.split(",")[0]
        for line in _expression("__gpu_dcgm_bodies.counters").splitlines()
        if line and not line.startswith("#")
    }
    wanted = {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    }
    assert wanted <= fields


@pytest.mark.parametrize(
    ("services", "pending"),
    [
        ({"nvidia-dcgm": (False, True), "dcgm-exporter": (True, True)}, ["hostengine"]),
        ({"nvidia-dcgm": (True, False), "dcgm-exporter": (True, True)}, ["hostengine"]),
        ({"nvidia-dcgm": (True, True), "dcgm-exporter": (False, False)}, ["exporter"]),
        ({}, ["hostengine", "exporter"]),
    ],
)
def test_a_stopped_or_disabled_service_is_started(
    services: dict[str, tuple[bool, bool]], pending: list[str]
) -> None:
    assert _plan(_node(services=services))["pending"] == pending


def test_userspace_installs_no_exporter_and_starts_nothing() -> None:
    files = {UNIT: None, COUNTERS: None}
    plan = _plan(_node("userspace", files=files, services={}), gpu_dcgm_install_mode="userspace")
    assert plan["pending"] == []
    names = _expression("__gpu_dcgm_names", gpu_dcgm_install_mode="userspace")
    assert names["apt_names"] == ENGINE and names["read"]["services"] == []


def test_without_nvidia_s_repository_nothing_is_done_and_the_plan_says_why() -> None:
    plan = _plan(_node(files={SOURCES: None}, installed=[], services={}))
    assert (plan["pending"], plan["todo"]) == ([], False)
    assert "NVIDIA's CUDA repository is not configured" in plan["skipped"]


def test_rocky_installs_with_dnf_on_every_converge() -> None:
    plan = _plan(_node(files={SOURCES: None}), facts=ROCKY)
    assert plan["pending"] == ["install"] and "hold" not in plan


@pytest.mark.parametrize("version", ["4.4", "4.4.2-1", "latest"])
def test_a_bad_pin_fails_with_the_validate_message_and_plans_nothing(version: str) -> None:
    plan = _plan(_node(), gpu_dcgm_version=version)
    assert plan["failed"] == [
        f"gpu_dcgm_version={version}: versions.dcgm must be <major>.<minor>.<patch>, e.g. 4.4.2."
    ]
    assert (plan["pending"], plan["todo"]) == ([], True)
    assert include_runs(ROLE, _node(), gpu_dcgm_version=version)


def test_the_role_reads_the_node_itself_without_the_shared_read_or_after_a_change() -> None:
    assert include_runs(ROLE, None)
    assert include_runs(ROLE, _node(), __gpucluster_node_changed=True)


def test_the_files_keep_the_text_the_role_wrote_before_they_became_templates() -> None:
    assert _expression("__gpu_dcgm_bodies.preferences", gpu_dcgm_version="3.3.9") == (
        "# Managed by Ansible (role gpu_dcgm): DCGM 3.3.9 as pinned in the cluster file.\n"
        "Package: datacenter-gpu-manager\nPin: version 1:3.3.9*\nPin-Priority: 1001\n\n"
        "Package: datacenter-gpu-manager-exporter\nPin: version 3.3.9-*\nPin-Priority: 1001\n"
    )
    assert _expression("__gpu_dcgm_bodies.preferences", gpu_dcgm_install_mode="userspace") == (
        "# Managed by Ansible (role gpu_dcgm): DCGM 4.4.2 as pinned in the cluster file.\n"
        "Package: datacenter-gpu-manager-4-core\nPin: version 1:4.4.2*\nPin-Priority: 1001\n\n"
        "Package: datacenter-gpu-manager-4-cuda13\nPin: version 1:4.4.2*\nPin-Priority: 1001\n"
    )


def test_converge_runs_the_read_and_only_the_steps_the_plan_names() -> None:
    stopped = {"nvidia-dcgm": (True, True), "dcgm-exporter": (False, True)}
    assert converge_steps(ROLE, _node(services=stopped)) == [
        "Read the node's DCGM packages, files and services",
        "Mark the node changed in this play",
        "Start the DCGM exporter",
        "Wait for the exporter to serve metrics",
    ]
    assert converge_steps(ROLE, _node(files={UNIT: None}))[2] == "Write the DCGM exporter's systemd unit"
    assert converge_steps(ROLE, _node()) == ["Read the node's DCGM packages, files and services"]
    userspace = _node("userspace", services={})
    assert converge_steps(ROLE, userspace, gpu_dcgm_install_mode="userspace") == [
        "Read the node's DCGM packages, files and services"
    ]
