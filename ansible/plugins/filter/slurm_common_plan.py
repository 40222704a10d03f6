"""Filters: what slurm_common's inputs name, and what a converge of the role would change on a node.

`slurm_common_names` needs no node state (the package names of the source, the accounts, paths, the node
read, the handlers, the inventory check); `slurm_common_plan` adds the node state and says which steps are
pending, and from the package source's answer (`apt-cache madison` or `dnf list`) which version is the pin.
Each step is the `when` the role's tasks carried in Jinja before (tests/ansible/test_slurm_common_plan.py).
The shared Slurm files and the hosts block stay with the renderer: the plan gets their records from the
gpucluster.cluster.render lookup.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_files import node_file_changes
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    accounts_differ,
    block_present,
    packages_missing,
    paths_differ,
    service_current,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import failed_checks, plan

KEY = "/etc/munge/munge.key"
CHRONY_SOURCES = "/etc/chrony/sources.d/gpucluster.sources"
MEMLOCK = "/etc/security/limits.d/90-gpucluster-memlock.conf"
DIRECTORIES = [
    {"path": "/etc/slurm", "kind": "directory", "owner": "root", "group": "root", "mode": "0755"},
    {"path": "/var/log/slurm", "kind": "directory", "owner": "slurm", "group": "slurm", "mode": "0755"},
]
# Slurm's package names per OS family and source: SchedMD's Debian packaging names them slurm-smd-*, its
# RPM spec (rpmbuild -ta) and EPEL slurm-*. https://slurm.schedmd.com/quickstart_admin.html#pkg_install
_DEBIAN = {"client": "slurm-client", "slurmd": "slurmd", "slurmctld": "slurmctld", "slurmdbd": "slurmdbd"}
_SMD = {daemon: f"slurm-smd-{daemon}" for daemon in ("client", "slurmd", "slurmctld", "slurmdbd")}
_RPM = {"client": "slurm", **{daemon: f"slurm-{daemon}" for daemon in ("slurmd", "slurmctld", "slurmdbd")}}
PACKAGE_NAMES = {
    "Debian": {"distribution": _DEBIAN, "site-repository": _SMD, "upstream-release": _SMD},
    # upstream-release is refused on the RHEL family (release.yml); the names keep the lookup defined.
    "RedHat": {"distribution": _RPM, "site-repository": _RPM, "upstream-release": _RPM},
}
# `apt-cache madison` rows "name | version | source", dnf rows "name.arch version repo".
_OFFERED_ROW = re.compile(r"^\s*\S+\s*[|]?\s*([^\s|]+).*$")


def _ids(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The two service accounts: fixed ids so every node, cloud or rack, agrees on file ownership."""
    return [
        {"name": "munge", "id": inputs["munge_uid"], "home": "/nonexistent", "shell": "/usr/sbin/nologin"},
        {"name": "slurm", "id": inputs["slurm_uid"], "home": "/var/lib/slurm", "shell": "/usr/sbin/nologin"},
    ]


def _handlers(inputs: dict[str, Any]) -> dict[str, str]:
    """What each action of the node-file table means here: a handler of this play, or nothing ('').

    slurmctld restarts only on the controller; a drained slurmd restart only where slurm_node runs in the
    same play.
    """
    controller = inputs["host"] == inputs["controller_host"]
    return {
        "reconfigure": "Reconfigure Slurm",
        "slurmctld-restart": "Restart slurmctld" if controller else "",
        "slurmd-drain-restart": "Restart slurmd" if "slurm_node" in inputs["play_roles"] else "",
    }


def slurm_common_names(inputs: dict[str, Any], files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The source's package names, the accounts, paths, handlers and node read; the inventory check.

    files: the node-file records the role writes (the render lookup's), read beside the role's own paths.
    """
    packages = PACKAGE_NAMES.get(inputs["os_family"], PACKAGE_NAMES["Debian"])[inputs["package_source"]]
    dests = [record["dest"] for record in files or []]
    signing_key = str(inputs["package_signing_key"])
    return {
        "failed": failed_checks(
            [
                (
                    inputs["controller_known"] or inputs.get("image", False),
                    f"slurm_common_controller_host={inputs['controller_host']} is not an inventory host; run"
                    " with the cluster file as inventory (ansible-playbook -i clusters/NAME.yaml) so the"
                    " controller is known.",
                )
            ]
        ),
        "packages": packages,
        "ids": _ids(inputs),
        "key": KEY,
        "directories": DIRECTORIES,
        "chrony_sources": CHRONY_SOURCES,
        "memlock_file": MEMLOCK,
        # A package version whose upstream part is the pin: [epoch:]<pin>[-revision] (dpkg), <pin>-<release>.
        "pin_pattern": rf"^([0-9]+:)?{re.escape(str(inputs['slurm_version']))}([-~+].*)?$",
        "site_key": "/etc/apt/keyrings/slurm." + ("gpg" if re.search("[.]gpg$", signing_key) else "asc"),
        "hosts_marker": f"# {{mark}} gpucluster {inputs['cluster_name']}",
        "handlers": _handlers(inputs),
        "read": {
            "accounts": ["munge", "slurm"] + [user["name"] for user in inputs["job_users"]],
            "packages": True,
            "package_names": ["munge", "chrony", packages["client"]],
            "paths": ["/etc/slurm", "/var/log/slurm", KEY, CHRONY_SOURCES, MEMLOCK, *dests],
            "read": dests,
            "services": ["munge", "chrony"],
        },
    }


def _at_pin(inputs: dict[str, Any], state: dict[str, Any], names: dict[str, Any]) -> bool:
    """The Slurm client at the pin, and held where apt could move it."""
    client = names["packages"]["client"]
    version = str(state.get("versions", {}).get(client, ""))
    held = client in state.get("held", []) or inputs["os_family"] != "Debian"
    return re.match(names["pin_pattern"], version) is not None and held


def _offer(stdout: str, pin_pattern: str) -> dict[str, list[str]]:
    """The versions the package source offers (its answer's second column), and those at the pin."""
    versions: list[str] = []
    for line in stdout.splitlines():
        version = _OFFERED_ROW.sub(r"\1", line)
        if version and version not in versions:
            versions.append(version)
    return {"versions": versions, "at_pin": [v for v in versions if re.match(pin_pattern, v)]}


def _chrony(inputs: dict[str, Any], state: dict[str, Any], bodies: dict[str, str]) -> dict[str, bool]:
    """Chrony installed, pointed at the cluster's time servers (where it names some), enabled and started.

    A unit whose start condition failed (ConditionCapability=CAP_SYS_TIME in a container) counts as started.
    """
    unit = state.get("services", {}).get("chrony", {})
    return {
        "install": len(packages_missing(state, ["chrony"])) > 0,
        "sources": len(inputs["time_servers"]) > 0
        and not state_current(state, CHRONY_SOURCES, bodies["chrony_sources"]),
        "start": not unit.get("enabled", False)
        or not (unit.get("active", False) or unit.get("condition_failed", False)),
    }


def _munge(state: dict[str, Any], controller_key: str) -> dict[str, bool]:
    """Munge: the key unknown (controller not read in this run) or another on the node, its file, the unit."""
    key_file = state_current(state, KEY, owner="munge", group="munge", mode="0400")
    checksum = state.get("files", {}).get(KEY, {}).get("checksum", "")
    return {
        "key_file_current": key_file,
        "needed": controller_key == ""
        or checksum != controller_key
        or not key_file
        or not service_current(state, "munge"),
    }


def slurm_common_version(
    inputs: dict[str, Any], state: dict[str, Any], *, offered: str = ""
) -> dict[str, Any]:
    """The Slurm client at the pin or not, what the source offers, the package version to install and hold.

    The plan's version facts without the rest of the plan (no node files, no bodies): remember_version.yml
    publishes them on every run, so they cost a converged node no more than they need.
    """
    names = slurm_common_names(inputs)
    at_pin = _at_pin(inputs, state, names)
    offer = _offer(offered, names["pin_pattern"])
    client = names["packages"]["client"]
    return {
        "at_pin": at_pin,
        "offered_versions": offer["versions"],
        "offered_pin": offer["at_pin"],
        "package_version": state.get("versions", {}).get(client, "")
        if at_pin
        else next(iter(offer["at_pin"]), ""),
        "packages": names["packages"],
    }


def slurm_common_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    files: list[dict[str, Any]] | None = None,
    controller_key: str = "",
    *,
    offered: str = "",
) -> dict[str, Any]:
    """Steps: accounts, packages, directories, chrony, memlock, munge, hosts, slurm-files; the version.

    bodies: chrony's sources and the memlock limit as the role writes them. files: the node-file records
    (none in a node image). controller_key: the controller's munge key checksum where its state was read in
    this run (''). offered: the package source's answer, read only where the client is not at the pin.
    """
    names = slurm_common_names(inputs, files)
    facts = slurm_common_version(inputs, state, offered=offered)
    at_pin = facts["at_pin"]
    if names["failed"]:
        return {**plan(names["failed"]), **facts}
    ids = accounts_differ(state, names["ids"])
    job_users = accounts_differ(state, inputs["job_users"])
    chrony = _chrony(inputs, state, bodies)
    munge = _munge(state, controller_key)
    hosts = next((record for record in files or [] if record["block"]), None)
    steps = {
        "accounts": bool(ids or job_users),
        "packages": not at_pin or len(packages_missing(state, ["munge"])) > 0,
        "directories": paths_differ(state, DIRECTORIES),
        "chrony": any(chrony.values()),
        "memlock": not state_current(state, MEMLOCK, bodies["memlock"]),
        "munge": munge["needed"],
        "hosts": hosts is not None
        and not (
            state_current(state, hosts["dest"])
            and block_present(state, hosts["dest"], names["hosts_marker"], hosts["content"])
        ),
        "slurm-files": node_file_changes(files or [], state, inputs["host"], str(inputs["slurm_version"])),
    }
    extra = {
        "ids": ids,
        "job_users": job_users,
        "chrony_steps": chrony,
        "chrony_unit": state.get("services", {}).get("chrony", {}),
        "hosts_file": hosts or {},
    }
    return {**plan([], steps), **facts, **extra, "key_file_current": munge["key_file_current"]}


class FilterModule:
    """gpucluster.cluster.slurm_common_names, slurm_common_version and slurm_common_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "slurm_common_names": slurm_common_names,
            "slurm_common_version": slurm_common_version,
            "slurm_common_plan": slurm_common_plan,
        }
