"""Filters: what slurm_node's inputs name, and what a converge of the role would change on a node.

`slurm_node_names` needs no node state (the node read, the handlers); `slurm_node_plan` adds the node state
and the controller's slurmctld version and says which checks fail and which steps are pending. Each step is
the `when` the role's tasks carried in Jinja before (tests/ansible/test_slurm_node_plan.py). gres.conf stays
with the renderer: the plan gets its record from the gpucluster.cluster.render lookup.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.module_utils.compat.version import LooseVersion
from ansible_collections.gpucluster.cluster.plugins.filter.node_files import node_file_changes
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    service_current,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import as_bool, failed_checks, plan

# What each action of the node-file table means for this role's files.
HANDLERS = {
    "reconfigure": "Reconfigure Slurm",
    "slurmctld-restart": "",
    "slurmd-drain-restart": "Restart slurmd",
}


def slurm_node_names(inputs: dict[str, Any], files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The node read (the spool directory, node files, GPU devices) and the handlers.

    slurmd's package name comes from slurm_common's choice (a fact set during the play), so the read names
    every packaging's slurmd (slurmd, slurm-smd-slurmd, slurm-slurmd) and the play's shared read can hold it.
    """
    dests = [record["dest"] for record in files or []]
    program = [inputs["health_program"]["path"]] if inputs.get("health_program") else []
    return {
        "handlers": HANDLERS,
        "read": {
            "packages": True,
            "package_names": ["*slurmd"],
            "paths": [inputs["spool_dir"], *dests, *program, *inputs["gpu_devices"]],
            "read": dests,
            "services": ["slurmd"],
        },
    }


def controller_version(package_version: str, slurmctld_v: str) -> str:
    """The upstream slurmctld version: the controller play's package version, else `slurmctld -V`'s."""
    raw = package_version or slurmctld_v.strip().split(" ")[-1]
    return re.sub(r"^([0-9]+:)?([0-9.]+).*$", r"\2", raw)


def _checks(inputs: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """Slurmctld not older than slurmd (https://slurm.schedmd.com/upgrades.html); the GPU devices there."""
    host, version = inputs["host"], str(inputs["slurm_version"])
    controller = controller_version(str(inputs["controller_package_version"]), str(inputs["slurmctld_v"]))
    files = state.get("files", {})
    missing = [device for device in inputs["gpu_devices"] if not files.get(device, {}).get("exists")]
    return failed_checks(
        [
            (
                controller != "" and LooseVersion(controller) >= LooseVersion(version),
                f"slurmd {version} on {host} would be newer than slurmctld {controller or '(not installed)'}"
                f" on {inputs['controller_host']}; converge the controller first (ansible-playbook …"
                f" --limit {inputs['controller_host']}).",
            ),
            (
                not missing,
                f"{host} lacks declared GPU device(s) {', '.join(missing)}: the hardware profile declares"
                f" {len(inputs['gpu_devices'])} GPUs; fix the node or its profile.",
            ),
        ]
    )


def _health_program_differs(inputs: dict[str, Any], state: dict[str, Any]) -> bool:
    """The node health program is missing or not this collection's copy (inputs without one: no step)."""
    program = inputs.get("health_program")
    if not program:
        return False
    # ansible.builtin.file's lookup drops the file's last newline: compare with it put back.
    content = str(program["content"]).rstrip("\n") + "\n"
    return not state_current(state, str(program["path"]), content, mode="0755")


def slurm_node_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    pin: dict[str, str],
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Steps: spool directory, node files, health program, acceptance hold, slurmd package, service; checks.

    pin: slurmd's package name and the version slurm_common chose. files: the node-file records
    (gres.conf); the plan's `node files` are those that differ, with the actions the node-file table gives
    each change. A node without slurmd is new: it is held for acceptance.
    """
    slurmd = pin["slurmd"]
    installed = str(state.get("versions", {}).get(slurmd, ""))
    installed_before = installed != ""
    steps = {
        "spool directory": not state_current(state, inputs["spool_dir"], kind="directory", mode="0755"),
        "node files": node_file_changes(files or [], state, inputs["host"], str(inputs["slurm_version"])),
        "health program": _health_program_differs(inputs, state),
        "acceptance hold": as_bool(inputs["hold_for_acceptance"]) and not installed_before,
        "slurmd package": installed != str(pin["version"])
        or (inputs["os_family"] == "Debian" and slurmd not in state.get("held", [])),
        "slurmd service": not service_current(state, "slurmd"),
    }
    failed = [] if as_bool(inputs.get("image", False)) else _checks(inputs, state)
    return {**plan(failed, steps), "installed_before": installed_before}


class FilterModule:
    """gpucluster.cluster.slurm_node_names and slurm_node_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"slurm_node_names": slurm_node_names, "slurm_node_plan": slurm_node_plan}
