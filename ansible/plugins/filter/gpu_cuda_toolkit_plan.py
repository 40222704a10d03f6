"""Filters: what gpu_cuda_toolkit's pin names, and what a converge of the role would change on a node.

`gpu_cuda_toolkit_names` needs no node state (the package, paths and the node read the pin gives, and the
input check); `gpu_cuda_toolkit_plan` adds the node state and says which steps are pending. Each step is the
`when` the role's tasks carried in Jinja before (tests/ansible/test_gpu_cuda_toolkit_plan.py).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import state_current
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    NVIDIA_APT_SOURCES,
    apt_to_hold,
    failed_checks,
    installed_names,
    matches,
    nvidia_repository_skip,
    plan,
)

PREFERENCES = "/etc/apt/preferences.d/gpucluster-cuda-toolkit.pref"
PROFILE = "/etc/profile.d/gpucluster-cuda.sh"


def gpu_cuda_toolkit_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """The toolkit package, its home, the pin's version glob and patterns, the node read; the failed check."""
    version = str(inputs["version"])
    parts = version.split(".")
    minor = ".".join(parts[:2])
    dashed = minor.replace(".", "-")
    exact = len(parts) > 2  # <major>.<minor>.<patch> is exact; <major>.<minor> takes the newest patch release
    return {
        "failed": failed_checks(
            [
                (
                    matches(r"^[0-9]+[.][0-9]+([.][0-9]+)?$", version),
                    f"gpu_cuda_toolkit_version={version}: versions.cuda must be <major>.<minor>"
                    " (e.g. 12.8) or <major>.<minor>.<patch> (e.g. 12.8.1), the versions of NVIDIA's"
                    " cuda-toolkit-<major>-<minor> packages.",
                )
            ]
        ),
        "package": f"cuda-toolkit-{dashed}",
        "dashed": dashed,
        "home": f"/usr/local/cuda-{minor}",
        "version_glob": f"{version}-*" if exact else f"{version}.*",
        "version_regex": "^" + re.escape(version) + ("-" if exact else "[.]"),
        # Every package of this release (cuda-nvcc-12-8, libcublas-12-8, …, its config-common packages).
        "release_regex": (
            rf"^((cuda|lib[a-z0-9]*)(-[a-z0-9-]+)?-{dashed}|cuda-toolkit(-[0-9]+)*-config-common)$"
        ),
        "apt_sources": NVIDIA_APT_SOURCES,
        "apt_preferences": PREFERENCES,
        "profile": PROFILE,
        # what release_regex can match, and the toolkit package itself
        "read": {
            "packages": True,
            "package_names": ["cuda*", f"lib*-{dashed}"],
            "paths": [NVIDIA_APT_SOURCES, PREFERENCES, PROFILE],
        },
    }


def gpu_cuda_toolkit_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    after: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Steps: install (apt: preferences differ or toolkit missing; dnf: always), hold, profile.

    bodies: the preferences and profile texts as the role writes them. after: `installed` (dpkg-query's
    lines) and `changed` of this run's install, for the hold.
    """
    names = gpu_cuda_toolkit_names(inputs)
    if names["failed"]:
        return plan(names["failed"])
    skipped = nvidia_repository_skip(state, inputs["os_family"])
    if skipped:
        return plan([], skipped=skipped)
    steps: dict[str, Any] = {}
    if inputs["os_family"] == "RedHat":
        steps["install"] = True  # dnf at the pin and its versionlock: no state check
    else:
        installed = installed_names(state, after)
        steps["install"] = not state_current(state, PREFERENCES, bodies["preferences"]) or names[
            "package"
        ] not in state.get("installed", [])
        release = [name for name in installed if matches(names["release_regex"], name)]
        steps["hold"] = apt_to_hold(state, release, after)
    steps["profile"] = not state_current(state, PROFILE, bodies["profile"])
    return plan([], steps)


def gpu_cuda_toolkit_installed_version(names: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    """The toolkit's version in dpkg-query's lines after an install ('none' if absent); is it the pin?"""
    versions = dict(str(line).split(" ", 1) for line in lines if " " in str(line))
    version = versions.get(names["package"], "none")
    return {"version": version, "pinned": matches(names["version_regex"], version)}


class FilterModule:
    """gpucluster.cluster.gpu_cuda_toolkit_names, _plan and _installed_version."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "gpu_cuda_toolkit_names": gpu_cuda_toolkit_names,
            "gpu_cuda_toolkit_plan": gpu_cuda_toolkit_plan,
            "gpu_cuda_toolkit_installed_version": gpu_cuda_toolkit_installed_version,
        }
