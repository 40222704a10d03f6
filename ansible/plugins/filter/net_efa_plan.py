"""Filters: what net_efa's pins name, what a converge of the role would change, and the installer's check.

`net_efa_names` needs no node state (the installer's record, the plugin's version pattern, the installer's
package directory for this OS, the node read, the input check); `net_efa_plan` adds the node state (and,
after an install, the node read again) and says which steps are pending; `net_efa_installer_check` refuses
an installer that is not the pin before anything is installed. Each is what the role's vars/main.yml and
tasks carried in Jinja before (tests/ansible/test_net_efa_plan.py).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import packages_unheld
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    failed_checks,
    matches,
    plan,
)

# The installer's own record: "# EFA installer version: X", then name_version_arch entries.
RECORD = "/opt/amazon/efa_installed_packages"
SEMVER = r"^[0-9]+\.[0-9]+\.[0-9]+$"


def _os_dir(inputs: dict[str, Any]) -> str:
    """The installer's package directory for this OS, e.g. DEBS/DEBIAN12/x86_64 or DEBS/UBUNTU2404/x86_64."""
    kind = "DEBS" if inputs["os_family"] == "Debian" else "RPMS"
    distribution = str(inputs["distribution"])
    release = (
        str(inputs["distribution_version"]).replace(".", "")
        if distribution == "Ubuntu"
        else str(inputs["distribution_major_version"])
    )
    return f"{kind}/{distribution.upper()}{release}/{inputs['architecture']}"


def net_efa_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """The record, the plugin's version pattern, the installer's directories, the node read; the check."""
    installer, plugin = str(inputs["installer_version"]), str(inputs["aws_ofi_nccl_version"])
    check = (
        matches(SEMVER, installer) and matches(SEMVER, plugin) and inputs["os_family"] == "Debian",
        f"net_efa_installer_version={installer}, net_efa_aws_ofi_nccl_version={plugin} on"
        f" {inputs['distribution']}: versions.efa_installer and versions.aws_ofi_nccl must be"
        " <major>.<minor>.<patch> (e.g. 1.51.0 and 1.22.0), and the role supports the apt family only.",
    )
    return {
        "failed": failed_checks([check]),
        "record": RECORD,
        # A package version whose upstream part is the pin: [epoch:]<pin>[-revision].
        "plugin_pattern": f"^([0-9]+:)?{re.escape(plugin)}([-~+].*)?$",
        "os_dir": _os_dir(inputs),
        "unpacked": f"{inputs['workdir']}/aws-efa-installer",
        "read": {"packages": True, "read": [RECORD]},
    }


def _recorded(state: dict[str, Any]) -> tuple[str, list[str]]:
    """The installer version and the package names the record on the node lists ('' and [] without one)."""
    texts = state.get("texts", {}) if isinstance(state, dict) else {}
    text = str(texts.get(RECORD) or "")
    version = re.search(r"# EFA installer version: (\S+)", text)
    entries = " ".join(line for line in text.splitlines() if not line.startswith("#")).split()
    names = [re.sub(r"_.*$", "", entry) for entry in entries]
    return (version.group(1) if version else ""), [name for name in names if name]


def _at_pin(inputs: dict[str, Any], names: dict[str, Any], state: dict[str, Any]) -> bool:
    """Whether the node's record and plugin package show both pins."""
    version, _ = _recorded(state)
    versions = state.get("versions", {}) if isinstance(state, dict) else {}
    plugin = versions.get(inputs["aws_ofi_nccl_package"], "")
    return version == str(inputs["installer_version"]) and matches(names["plugin_pattern"], plugin)


def net_efa_plan(
    inputs: dict[str, Any], state: dict[str, Any], after: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Steps: install (the record or the plugin is not at its pin), hold (a recorded package unheld).

    after: the node read after this run's install (None before one); the packages to hold and the
    verification of the install (`unverified`, the message where it did not reach the pins) come from it.
    """
    names = net_efa_names(inputs)
    if names["failed"]:
        return {
            **plan(names["failed"]),
            "hold": [],
            "installed_version": "",
            "recorded": [],
            "unverified": "",
        }
    now = after if after else state
    version, recorded = _recorded(now)
    unverified = ""
    if after and not _at_pin(inputs, names, after):
        unverified = (
            f"The EFA installer ran, but {RECORD} or {inputs['aws_ofi_nccl_package']} does not show EFA"
            f" installer {inputs['installer_version']} with aws-ofi-nccl {inputs['aws_ofi_nccl_version']}."
        )
    steps = {
        "install": not _at_pin(inputs, names, state),
        "hold": packages_unheld(now, recorded),
    }
    return {**plan([], steps), "installed_version": version, "recorded": recorded, "unverified": unverified}


def net_efa_installer_check(inputs: dict[str, Any], env_sh: str, bundled: str) -> str:
    """Why the downloaded installer is refused ('' where it is the pin and bundles the pinned plugin).

    env_sh: the installer's env.sh; bundled: the version of the plugin package it carries for this OS.
    """
    names = net_efa_names(inputs)
    found = re.search(r'EFA_INSTALLER_VERSION="?([0-9.]+)', env_sh)
    offered = found.group(1) if found else ""
    if offered == str(inputs["installer_version"]) and matches(names["plugin_pattern"], bundled):
        return ""
    return (
        f"versions.efa_installer pins {inputs['installer_version']} and versions.aws_ofi_nccl"
        f" {inputs['aws_ofi_nccl_version']}, but {inputs['installer_url']} is EFA installer"
        f" {offered or '(no version in env.sh)'} and bundles {inputs['aws_ofi_nccl_package']}"
        f" {bundled or 'in no version'} for {names['os_dir']}. Pin aws_ofi_nccl to the version the installer"
        f" bundles, or pick the installer release that bundles {inputs['aws_ofi_nccl_version']} (AWS's EFA"
        " release notes list them). Nothing was installed."
    )


class FilterModule:
    """gpucluster.cluster.net_efa_names, net_efa_plan and net_efa_installer_check."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "net_efa_names": net_efa_names,
            "net_efa_plan": net_efa_plan,
            "net_efa_installer_check": net_efa_installer_check,
        }
