"""Filters: what slurm_controller's inputs name, and what its install and configure steps would change.

`slurm_controller_names` needs no node state (the daemons of the host, the power programs' paths, the node
read, the handlers); `slurm_controller_plan` adds the node state and says which steps are pending
(tests/ansible/test_slurm_controller_plan.py). gres.conf, power.json and the routing files stay with the
renderer: the plan gets their records from the gpucluster.cluster.render lookup. With accounting, the read
also covers MariaDB's packages, the password file and the three daemons' units, so a converged controller
skips the database install, the password generation and the service starts (each a module run).
slurmdbd.conf holds the password, so it is compared after the role reads the password
(tasks/accounting.yml). The power programs' steps have no state check: they run on every converge.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_files import node_file_changes
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    packages_unheld,
    service_current,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import as_bool, plan

CONFIG_DIR = "/etc/gpucluster"
SLURMDBD_CONF = "/etc/slurm/slurmdbd.conf"
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
    accounting = as_bool(inputs["accounting"])
    daemons = [packages["slurmctld"]] + ([packages["slurmdbd"]] if accounting else [])
    dests = [record["dest"] for record in files or []]
    database = list(inputs["database_packages"]) if accounting else []
    accounting_paths = [inputs["password_file"], SLURMDBD_CONF] if accounting else []
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
        "slurmdbd_conf": SLURMDBD_CONF,
        "handlers": HANDLERS,
        "read": {
            "packages": True,
            "package_names": daemons + database,
            "paths": [inputs["state_dir"], CONFIG_DIR, *dests, *accounting_paths],
            "read": dests,
            "services": ["slurmctld", *(["mariadb", "slurmdbd"] if accounting else [])],
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
        **_accounting_steps(inputs, state, debian),
        # A slurmctld that runs already is left to the handlers (a changed file restarts or reconfigures it).
        "slurmctld": not service_current(state, "slurmctld"),
    }
    changed = steps["node files"]
    steps["routing units"] = [record["dest"] for record in changed if record["path"] in ROUTING_UNITS]
    return plan([], steps)


def _accounting_steps(inputs: dict[str, Any], state: dict[str, Any], debian: bool) -> dict[str, bool]:
    """MariaDB installed and running, the password generated, slurmdbd running (none without accounting)."""
    if not as_bool(inputs["accounting"]):
        return {"database": False, "mariadb": False, "password": False, "slurmdbd": False}
    return {
        # dnf is asked on every converge, like the daemons.
        "database": not debian or len(packages_missing(state, list(inputs["database_packages"]))) > 0,
        "mariadb": not service_current(state, "mariadb"),
        "password": not state.get("files", {}).get(inputs["password_file"], {}).get("exists", False),
        "slurmdbd": not service_current(state, "slurmdbd"),
    }


class FilterModule:
    """gpucluster.cluster.slurm_controller_names and slurm_controller_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "slurm_controller_names": slurm_controller_names,
            "slurm_controller_plan": slurm_controller_plan,
        }
