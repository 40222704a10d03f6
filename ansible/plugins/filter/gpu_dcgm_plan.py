"""Filters: what gpu_dcgm's pins name, and what a converge of the role would change on a node.

`gpu_dcgm_names` needs no node state (the packages and globs of the pins, the node read, the input check);
`gpu_dcgm_plan` adds the node state and says which steps are pending. Each step is the `when` the role's
tasks carried in Jinja before (tests/ansible/test_gpu_dcgm_plan.py).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    service_current,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    NVIDIA_APT_SOURCES,
    apt_to_hold,
    as_int,
    failed_checks,
    matches,
    nvidia_repository_skip,
    plan,
)

PREFERENCES = "/etc/apt/preferences.d/gpucluster-dcgm.pref"
EXPORTER_UNIT = "/etc/systemd/system/dcgm-exporter.service"
SERVICES = ["nvidia-dcgm", "dcgm-exporter"]


def _engine_packages(version: str, cuda_version: str) -> list[str]:
    """DCGM 4: the core and the diagnostics built for the CUDA major; DCGM 3: one package.

    https://docs.nvidia.com/datacenter/dcgm/latest/installation.html
    """
    if as_int(version.split(".", maxsplit=1)[0]) >= 4:
        cuda_major = cuda_version.split(".", maxsplit=1)[0]
        return ["datacenter-gpu-manager-4-core", f"datacenter-gpu-manager-4-cuda{cuda_major}"]
    return ["datacenter-gpu-manager"]


def gpu_dcgm_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """The engine (and in full mode exporter) packages, their apt globs, the node read; the failed check."""
    version = str(inputs["version"])
    full = inputs["install_mode"] == "full"
    engine = _engine_packages(version, str(inputs["cuda_version"]))
    apt_glob = f"1:{version}*"  # NVIDIA's apt packages carry epoch 1 (1:4.4.2-1); RHEL ones do not
    exporter = [str(inputs["exporter_package"])] if full else []
    apt_names = engine + exporter
    return {
        "failed": failed_checks(
            [
                (
                    matches(r"^[0-9]+\.[0-9]+\.[0-9]+$", version),
                    f"gpu_dcgm_version={version}: versions.dcgm must be <major>.<minor>.<patch>, e.g. 4.4.2.",
                )
            ]
        ),
        "full": full,
        "engine_packages": engine,
        "apt_glob": apt_glob,
        "apt_names": apt_names,
        "apt_globs": [apt_glob] * len(engine) + ([str(inputs["exporter_version"])] if full else []),
        "rpm_packages": [f"{name}-{version}" for name in engine],
        "apt_sources": NVIDIA_APT_SOURCES,
        "apt_preferences": PREFERENCES,
        "exporter_unit": EXPORTER_UNIT,
        "read": {
            "packages": True,
            "package_names": apt_names,
            "paths": [
                NVIDIA_APT_SOURCES,
                PREFERENCES,
                EXPORTER_UNIT,
                *([str(inputs["counters"])] if full else []),
            ],
            "services": SERVICES if full else [],
        },
    }


def gpu_dcgm_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    after: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Steps: install, hold; in full mode the exporter's unit and counters, the host engine and the exporter.

    install: apt preferences differ or a package is missing (dnf: always); hold: a package unheld; the unit
    and the counters file where the node's differ; each service where it is not active and enabled. bodies:
    the preferences, the exporter unit and the counters file as the role writes them. after: `changed` of
    this run's install, for the hold.
    """
    names = gpu_dcgm_names(inputs)
    if names["failed"]:
        return plan(names["failed"])
    skipped = nvidia_repository_skip(state, inputs["os_family"])
    if skipped:
        return plan([], skipped=skipped)
    steps: dict[str, Any] = {}
    if inputs["os_family"] == "RedHat":
        steps["install"] = True  # dnf at the pins and their versionlocks: no state check
    else:
        steps["install"] = (
            not state_current(state, PREFERENCES, bodies["preferences"])
            or len(packages_missing(state, names["apt_names"])) > 0
        )
        steps["hold"] = apt_to_hold(state, names["apt_names"], after)
    if names["full"]:  # both services need GPUs
        steps["unit"] = not state_current(state, EXPORTER_UNIT, bodies["exporter_unit"])
        steps["counters"] = not state_current(state, str(inputs["counters"]), bodies["counters"])
        steps["hostengine"] = not service_current(state, "nvidia-dcgm")
        steps["exporter"] = not service_current(state, "dcgm-exporter")
    return plan([], steps)


class FilterModule:
    """gpucluster.cluster.gpu_dcgm_names and gpu_dcgm_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"gpu_dcgm_names": gpu_dcgm_names, "gpu_dcgm_plan": gpu_dcgm_plan}
