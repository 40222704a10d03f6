"""Filters: what slurm_controller's inputs name, and what its install and configure steps would change.

`slurm_controller_names` needs no node state (the daemons of the host, the power programs' paths, the node
read, the handlers); `slurm_controller_plan` adds the node state and says which steps are pending
(tests/ansible/test_slurm_controller_plan.py). gres.conf and power.json stay with the renderer: the plan gets
their records from the gpucluster.cluster.render lookup. Accounting, the power programs and the service
steps have no state check: they run on every converge, as before.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_files import node_file_changes
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_unheld,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import as_bool, plan

CONFIG_DIR = "/etc/gpucluster"
# The burst controller's systemd units among the node files (clusters with a routing section only).
ROUTING_UNITS = ("routing/gpucluster-routing.service", "routing/gpucluster-routing.timer")
# What each action of the node-file table means on the controller (no slurmd runs here).
HANDLERS = {
    "reconfigure": "Reconfigure Slurm",
    "slurmctld-restart": "Restart slurmctld",
    "slurmd-drain-restart": "Reconfigure Slurm",
}


def slurm_controller_names(
    inputs: dict[str, Any], files: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The host's Slurm daemons (slurm_common's package names), the power programs' paths, the read, handlers.

    files: the node-file records the role writes (the render lookup's), read beside the role's own paths.
    """
    packages = inputs["packages"]
    daemons = [packages["slurmctld"]] + ([packages["slurmdbd"]] if as_bool(inputs["accounting"]) else [])
    dests = [record["dest"] for record in files or []]
    routing = any(record["path"] in ROUTING_UNITS for record in files or [])
    return {
        "daemons": daemons,
        # The renderer writes the burst controller's files only for a cluster file with a routing section.
        "routing": routing,
        # The power programs and the burst controller share one virtual environment (the gpucluster wheel).
        "programs": as_bool(inputs["power"]) or routing,
        # The power programs live where slurm.conf names them (gpucluster.names.POWER_BIN is its bin/).
        "power_venv": "/opt/gpucluster",
        "power_wheels": "/var/cache/gpucluster/wheels",
        "handlers": HANDLERS,
        "read": {
            "packages": True,
            "package_names": daemons,
            "paths": [inputs["state_dir"], CONFIG_DIR, *dests],
            "read": dests,
        },
    }


def slurm_controller_plan(
    inputs: dict[str, Any], state: dict[str, Any], files: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Steps: state directory, daemons (at the pin, held; dnf always), config directory, node files.

    files: the node-file records (gres.conf, power.json, the routing files); the plan's `node files` are those
    that differ, with the actions the node-file table gives each change. `routing units` names the burst
    controller's units among them: systemd reloads its units and the timer restarts only then.
    """
    names = slurm_controller_names(inputs, files)
    daemons, version = names["daemons"], str(inputs["package_version"])
    versions = state.get("versions", {})
    debian = inputs["os_family"] == "Debian"
    steps = {
        "state directory": not state_current(
            state, inputs["state_dir"], kind="directory", mode="0700", owner="slurm", group="slurm"
        ),
        "daemons": not debian
        or any(str(versions.get(daemon, "")) != version for daemon in daemons)
        or len(packages_unheld(state, daemons)) > 0,
        "config directory": names["programs"]
        and not state_current(state, CONFIG_DIR, kind="directory", mode="0750", owner="root", group="slurm"),
        "node files": node_file_changes(files or [], state, inputs["host"], str(inputs["slurm_version"])),
    }
    changed = steps["node files"]
    steps["routing units"] = [record["dest"] for record in changed if record["path"] in ROUTING_UNITS]
    return plan([], steps)


class FilterModule:
    """gpucluster.cluster.slurm_controller_names and slurm_controller_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "slurm_controller_names": slurm_controller_names,
            "slurm_controller_plan": slurm_controller_plan,
        }
