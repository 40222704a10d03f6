"""Filters: what gpu_nccl's pins name, and what a converge of the role would change on a node.

`gpu_nccl_names` needs no node state (the build, packages, paths and the node read the pins give, the input
check); `gpu_nccl_plan` adds the node state and says which steps are pending. Each step is the `when` the
role's tasks carried in Jinja before (tests/ansible/test_gpu_nccl_plan.py). nccl.conf and the fabric
environment stay with the renderer: the plan gets their records from the gpucluster.cluster.render lookup.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    paths_differ,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    NVIDIA_APT_SOURCES,
    apt_to_hold,
    failed_checks,
    matches,
    nvidia_repository_skip,
    plan,
)

PREFERENCES = "/etc/apt/preferences.d/gpucluster-nccl.pref"
CONFIG_DIR = "/etc/gpucluster"
APT_NAMES = ["libnccl2", "libnccl-dev"]


def _check(version: str, cuda_version: str) -> list[str]:
    return failed_checks(
        [
            (
                matches(r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+$", version)
                and matches(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$", cuda_version),
                f"gpu_nccl_version={version}, gpu_nccl_cuda_version={cuda_version}: versions.nccl must be"
                " NVIDIA's package version (e.g. 2.26.2-1) and versions.cuda <major>.<minor>[.<patch>]"
                " (e.g. 12.8).",
            )
        ]
    )


def gpu_nccl_names(inputs: dict[str, Any], files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The NCCL build and its packages, the build tools, CUDA and MPI homes, the node read; the failed check.

    files: the node-file records the role writes (the render lookup's), read beside the role's own paths.
    """
    version, cuda_version = str(inputs["version"]), str(inputs["cuda_version"])
    debian = inputs["os_family"] == "Debian"
    minor = ".".join(cuda_version.split(".")[:2])
    build = f"{version}+cuda{minor}"  # NVIDIA's CUDA repository names NCCL builds <version>+cuda<major.minor>
    cuda_home = f"/usr/local/cuda-{minor}"
    return {
        "failed": _check(version, cuda_version),
        "build": build,
        "apt_names": APT_NAMES,
        "packages": (
            [f"{name}={build}" for name in APT_NAMES]
            if debian
            else [f"libnccl-{build}", f"libnccl-devel-{build}"]
        ),
        # Debian's Slurm mpi/pmix plugin dlopens the unversioned libpmix.so, which only libpmix-dev ships
        # (libpmix2 alone: "can not load PMIx library", seen on the test rack); srun --mpi=pmix needs it.
        "build_tools": (
            ["make", "g++", "openmpi-bin", "libopenmpi-dev", "libpmix-dev"]
            if debian
            else ["make", "gcc-c++", "openmpi-devel"]
        ),
        "mpi_home": (
            f"/usr/lib/{inputs['architecture']}-linux-gnu/openmpi" if debian else "/usr/lib64/openmpi"
        ),
        "cuda_home": cuda_home,
        "nvcc": f"{cuda_home}/bin/nvcc",
        # "-mpi": a node built before MPI=1 gets the MPI build, and the build link moves to it.
        "tests_source": f"{inputs['tests_dir']}/src-{inputs['tests_version']}-mpi",
        "apt_sources": NVIDIA_APT_SOURCES,
        "apt_preferences": PREFERENCES,
        "read": {
            "packages": True,
            "package_names": APT_NAMES,
            "paths": [CONFIG_DIR, f"{cuda_home}/bin/nvcc", NVIDIA_APT_SOURCES, PREFERENCES]
            + [record["dest"] for record in files or []],
        },
    }


def _install_steps(
    inputs: dict[str, Any], state: dict[str, Any], bodies: dict[str, str], after: dict[str, Any] | None
) -> dict[str, Any]:
    """Install and hold (apt: preferences or a package differ; dnf: always), nccl-tests (where nvcc is)."""
    steps: dict[str, Any] = {}
    if inputs["os_family"] == "Debian":
        steps["install"] = (
            not state_current(state, PREFERENCES, bodies["preferences"])
            or len(packages_missing(state, APT_NAMES)) > 0
        )
        steps["hold"] = apt_to_hold(state, APT_NAMES, after)
    elif inputs["os_family"] == "RedHat":
        steps["install"] = True  # dnf at the pin and its versionlocks: no state check
    nvcc = gpu_nccl_names(inputs)["nvcc"]
    # The build tools come only where there is a CUDA compiler to build nccl-tests with; the build steps
    # have no state check (unarchive and make skip by `creates`).
    steps["nccl-tests"] = bool(state.get("files", {}).get(nvcc, {}).get("exists"))
    return steps


def gpu_nccl_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    after: dict[str, Any] | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Steps: install, hold, nccl-tests (where NVIDIA's repository is there), directory and files (always).

    The node files are written in every mode, also where the install is skipped. bodies: the apt preferences
    as the role writes them. after: `changed` of this run's install, for the hold. files: the node-file
    records (none in a node image); the plan's `files` are those whose content, mode or owner differ.
    """
    names = gpu_nccl_names(inputs)
    if names["failed"]:
        return plan(names["failed"])
    skipped = nvidia_repository_skip(state, inputs["os_family"])
    steps = {} if skipped else _install_steps(inputs, state, bodies, after)
    if files:
        steps["directory"] = not state_current(state, CONFIG_DIR, kind="directory", mode="0755")
        steps["files"] = paths_differ(state, files)
    return plan([], steps, skipped=skipped)


class FilterModule:
    """gpucluster.cluster.gpu_nccl_names and gpu_nccl_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"gpu_nccl_names": gpu_nccl_names, "gpu_nccl_plan": gpu_nccl_plan}
