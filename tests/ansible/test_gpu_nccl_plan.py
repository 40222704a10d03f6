"""gpu_nccl's plan: what a converge does on a node, from its pins, its node files and the node state.

Rendered through the role's own vars (inputs, template body, gpucluster.cluster.gpu_nccl_plan) by Ansible's
templar. The node files are records as the gpucluster.cluster.render lookup gives them (here: made up).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import ROCKY, file_entry, node_state, role_expression

ROLE = "gpu_nccl"
SOURCES = "/etc/apt/sources.list.d/cuda.sources"
PREFERENCES = "/etc/apt/preferences.d/gpucluster-nccl.pref"
NVCC = "/usr/local/cuda-13.0/bin/nvcc"
PACKAGES = ["libnccl2", "libnccl-dev"]
RECORDS = [
    {"path": "nccl/nccl.conf", "dest": "/etc/nccl.conf", "content": "NCCL_IB_HCA=mlx5\n"},
    {"path": "nccl/fabric.env", "dest": "/etc/gpucluster/fabric.env", "content": "GPUCLUSTER_FABRIC=ib\n"},
]
FILES = [{**record, "owner": "root", "group": "root", "mode": "0644", "block": False} for record in RECORDS]


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **{"__gpu_nccl_files": FILES, **overrides})


def _node(**change: Any) -> dict[str, Any]:
    """A node converged to NCCL 2.28.9-1 for CUDA 13.0 without a CUDA compiler, `change` applied."""
    files = {
        SOURCES: file_entry("Types: deb\n"),
        PREFERENCES: file_entry(_expression("__gpu_nccl_bodies.preferences")),
        "/etc/gpucluster": file_entry(kind="directory", mode="0755"),
        NVCC: None,
        **{record["dest"]: file_entry(record["content"]) for record in RECORDS},
        **change.get("files", {}),
    }
    installed = change.get("installed", PACKAGES)
    return node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=dict.fromkeys(installed, "2.28.9-1+cuda13.0"),
        held=change.get("held", installed),
    )


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__gpu_nccl_plan", __gpu_nccl_state=state, **overrides)
    return plan


@pytest.mark.parametrize("mode", ["full", "userspace"])  # NCCL is user space: both modes install it
def test_a_converged_node_has_nothing_to_do_and_runs_one_task(mode: str) -> None:
    plan = _plan(_node(), gpu_nccl_install_mode=mode)
    assert (plan["pending"], plan["todo"], plan["failed"], plan["skipped"]) == ([], False, [], "")
    assert not include_runs(ROLE, _node(), __gpu_nccl_files=FILES, gpu_nccl_install_mode=mode)


@pytest.mark.parametrize("missing", PACKAGES)
def test_a_missing_package_is_installed(missing: str) -> None:
    installed = [name for name in PACKAGES if name != missing]
    # A missing package is not held either: the hold runs after the install.
    assert _plan(_node(installed=installed))["pending"] == ["install", "hold"]


def test_another_build_pinned_rewrites_the_preferences_and_installs() -> None:
    old = _expression("__gpu_nccl_bodies.preferences", gpu_nccl_version="2.26.2-1")
    assert _plan(_node(files={PREFERENCES: file_entry(old)}))["pending"] == ["install"]


def test_an_unheld_package_is_held_and_after_an_install_that_changed_both_are() -> None:
    plan = _plan(_node(held=["libnccl2"]))
    assert (plan["pending"], plan["hold"]) == (["hold"], ["libnccl-dev"])
    assert _plan(_node(), __gpu_nccl_install={"changed": True})["hold"] == PACKAGES


def test_only_the_node_file_that_differs_is_written() -> None:
    edited = _plan(_node(files={"/etc/nccl.conf": file_entry("NCCL_DEBUG=INFO\n")}))
    assert edited["pending"] == ["files"]
    assert [record["dest"] for record in edited["files"]] == ["/etc/nccl.conf"]
    mode = _plan(_node(files={"/etc/gpucluster/fabric.env": file_entry(RECORDS[1]["content"], mode="0600")}))
    assert [record["dest"] for record in mode["files"]] == ["/etc/gpucluster/fabric.env"]


def test_the_configuration_directory_is_created_where_it_differs() -> None:
    plan = _plan(_node(files={"/etc/gpucluster": file_entry(kind="directory", mode="0700")}))
    assert plan["pending"] == ["directory"]


def test_with_a_cuda_compiler_nccl_tests_is_built_on_every_converge() -> None:
    """The build steps have no state check (unarchive and make skip by `creates`)."""
    assert _plan(_node(files={NVCC: file_entry("", mode="0755")}))["pending"] == ["nccl-tests"]


def test_without_nvidia_s_repository_only_the_node_files_are_written_and_the_plan_says_why() -> None:
    state = _node(
        files={SOURCES: None, NVCC: file_entry("", mode="0755"), "/etc/nccl.conf": None}, installed=[]
    )
    plan = _plan(state)
    assert plan["pending"] == ["files"]
    assert "NVIDIA's CUDA repository is not configured" in plan["skipped"]
    assert not _plan(_node(files={SOURCES: None}, installed=[]))["todo"]


def test_a_node_image_has_no_node_files_to_plan() -> None:
    """tasks/image.yml sets __gpu_nccl_files to []: no directory or file step, no cluster file needed."""
    state = _node(files={"/etc/gpucluster": None, "/etc/nccl.conf": None}, installed=[])
    plan = _plan(state, __gpu_nccl_files=[])
    assert plan["pending"] == ["install", "hold"]
    assert _expression("gpu_nccl_node_query.paths", __gpu_nccl_files=[]) == [
        "/etc/gpucluster",
        NVCC,
        SOURCES,
        PREFERENCES,
    ]


def test_rocky_installs_with_dnf_on_every_converge() -> None:
    plan = _plan(_node(files={SOURCES: None}), facts=ROCKY)
    assert plan["pending"] == ["install"] and "hold" not in plan
    assert _expression("__gpu_nccl_names.packages", facts=ROCKY) == [
        "libnccl-2.28.9-1+cuda13.0",
        "libnccl-devel-2.28.9-1+cuda13.0",
    ]


@pytest.mark.parametrize(("nccl", "cuda"), [("2.28.9", "13.0"), ("2.28.9-1", "13"), ("2.28.9-1", "cuda13")])
def test_a_bad_pin_fails_with_the_validate_message_and_plans_nothing(nccl: str, cuda: str) -> None:
    plan = _plan(_node(), gpu_nccl_version=nccl, gpu_nccl_cuda_version=cuda)
    assert plan["failed"] == [
        f"gpu_nccl_version={nccl}, gpu_nccl_cuda_version={cuda}: versions.nccl must be NVIDIA's package"
        " version (e.g. 2.26.2-1) and versions.cuda <major>.<minor>[.<patch>] (e.g. 12.8)."
    ]
    assert (plan["pending"], plan["todo"]) == ([], True)


def test_the_role_reads_the_node_itself_without_the_shared_read_or_after_a_change() -> None:
    assert include_runs(ROLE, None, __gpu_nccl_files=FILES)
    assert include_runs(ROLE, _node(), __gpu_nccl_files=FILES, __gpucluster_node_changed=True)


def test_the_read_names_the_node_files_and_the_build_its_packages() -> None:
    assert _expression("gpu_nccl_node_query") == {
        "packages": True,
        "package_names": PACKAGES,
        "paths": [
            "/etc/gpucluster",
            NVCC,
            SOURCES,
            PREFERENCES,
            "/etc/nccl.conf",
            "/etc/gpucluster/fabric.env",
        ],
    }
    assert _expression("__gpu_nccl_names.packages", gpu_nccl_cuda_version="12.8.1") == [
        "libnccl2=2.28.9-1+cuda12.8",
        "libnccl-dev=2.28.9-1+cuda12.8",
    ]


def test_the_preferences_keep_the_text_the_role_wrote_before_they_became_a_template() -> None:
    assert _expression("__gpu_nccl_bodies.preferences") == (
        "# Managed by Ansible (role gpu_nccl): NCCL 2.28.9-1+cuda13.0 as pinned in the cluster file.\n"
        "Package: libnccl2 libnccl-dev\nPin: version 2.28.9-1+cuda13.0\nPin-Priority: 1001\n"
    )


def test_converge_runs_the_read_and_only_the_steps_the_plan_names() -> None:
    state = _node(files={NVCC: file_entry("", mode="0755"), "/etc/nccl.conf": None}, held=[])
    assert converge_steps(ROLE, state, __gpu_nccl_files=FILES) == [
        "Read the node's NCCL packages, configuration files and CUDA compiler",
        "Mark the node changed in this play",
        "Hold NCCL against upgrades",
        "Build nccl-tests",
        "Write nccl.conf and the fabric environment",
    ]
    assert converge_steps(ROLE, _node(), __gpu_nccl_files=FILES) == [
        "Read the node's NCCL packages, configuration files and CUDA compiler"
    ]
