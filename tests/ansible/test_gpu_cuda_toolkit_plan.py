"""gpu_cuda_toolkit's plan: what a converge does on a node, from its pin and the node state.

Rendered through the role's own vars (inputs, template bodies, gpucluster.cluster.gpu_cuda_toolkit_plan)
by Ansible's templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.filter_plugins import filters
from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import ROCKY, file_entry, node_state, role_expression

ROLE = "gpu_cuda_toolkit"
SOURCES = "/etc/apt/sources.list.d/cuda.sources"
PREFERENCES = "/etc/apt/preferences.d/gpucluster-cuda-toolkit.pref"
PROFILE = "/etc/profile.d/gpucluster-cuda.sh"
RELEASE = ["cuda-toolkit-13-0", "cuda-toolkit-13-0-config-common", "cuda-nvcc-13-0", "libcublas-13-0"]
OTHERS = ["cuda-nvcc-12-8", "libfoo1"]  # installed, but not of the pinned release


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **overrides)


def _body(name: str, **overrides: Any) -> str:
    body: str = _expression(f"__gpu_cuda_toolkit_bodies.{name}", **overrides)
    return body


def _node(**change: Any) -> dict[str, Any]:
    """A node converged to CUDA 13.0, with `change` applied (files, installed, held)."""
    files = {
        SOURCES: file_entry("Types: deb\n"),
        PREFERENCES: file_entry(_body("preferences")),
        PROFILE: file_entry(_body("profile")),
        **change.get("files", {}),
    }
    installed = change.get("installed", RELEASE + OTHERS)
    return node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=dict.fromkeys(installed, "13.0.2-1"),
        held=change.get("held", RELEASE),
    )


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__gpu_cuda_toolkit_plan", __gpu_cuda_toolkit_state=state, **overrides)
    return plan


@pytest.mark.parametrize("mode", ["full", "userspace"])  # the toolkit needs no hardware: both modes install
def test_a_converged_node_has_nothing_to_do_and_runs_one_task(mode: str) -> None:
    plan = _plan(_node(), gpu_cuda_toolkit_install_mode=mode)
    assert (plan["pending"], plan["todo"], plan["failed"], plan["skipped"]) == ([], False, [], "")
    assert not include_runs(ROLE, _node())


def test_a_missing_toolkit_is_installed() -> None:
    installed = [name for name in RELEASE + OTHERS if name != "cuda-toolkit-13-0"]
    assert _plan(_node(installed=installed))["pending"] == ["install"]


def test_a_new_pin_rewrites_the_preferences_and_installs() -> None:
    """The node holds 12.8's preferences; the pin is 13.0 (apt then installs it at the pin)."""
    old = _body("preferences", gpu_cuda_toolkit_version="12.8")
    assert _plan(_node(files={PREFERENCES: file_entry(old)}))["pending"] == ["install"]
    assert _plan(_node(files={PREFERENCES: None}))["pending"] == ["install"]
    assert _plan(_node(files={PREFERENCES: file_entry(_body("preferences"), mode="0600")}))["pending"] == [
        "install"
    ]


def test_an_unheld_package_of_the_release_is_held_and_nothing_else() -> None:
    plan = _plan(_node(held=["cuda-toolkit-13-0"]))
    assert plan["pending"] == ["hold"]
    assert sorted(plan["hold"]) == ["cuda-nvcc-13-0", "cuda-toolkit-13-0-config-common", "libcublas-13-0"]


def test_after_an_install_that_changed_every_package_of_the_release_is_held_again() -> None:
    lines = [f"{name} 13.0.2-1" for name in [*RELEASE, "libcusparse-13-0", *OTHERS]]
    after = {
        "__gpu_cuda_toolkit_dpkg_after": {"stdout_lines": lines},
        "__gpu_cuda_toolkit_install": {"changed": True},
    }
    assert _plan(_node(), **after)["hold"] == [*RELEASE, "libcusparse-13-0"]
    unchanged = {**after, "__gpu_cuda_toolkit_install": {"changed": False}}
    assert _plan(_node(), **unchanged)["hold"] == ["libcusparse-13-0"]  # the one the read did not show held


@pytest.mark.parametrize(
    "profile", [None, file_entry("export PATH=/usr/local/cuda-12.8/bin:$PATH\n"), "mode"], ids=str
)
def test_a_missing_or_different_profile_script_is_written(profile: Any) -> None:
    entry = file_entry(_body("profile"), mode="0755") if profile == "mode" else profile
    assert _plan(_node(files={PROFILE: entry}))["pending"] == ["profile"]


def test_without_nvidia_s_repository_nothing_is_done_and_the_plan_says_why() -> None:
    plan = _plan(_node(files={SOURCES: None}, installed=[], held=[], **{}))
    assert (plan["pending"], plan["todo"]) == ([], False)
    assert "NVIDIA's CUDA repository is not configured" in plan["skipped"]
    assert "userspace mode without onprem.package_mirror" in plan["skipped"]


def test_rocky_installs_with_dnf_on_every_converge_and_holds_nothing_with_apt() -> None:
    plan = _plan(_node(files={SOURCES: None}), facts=ROCKY)
    assert plan["pending"] == ["install"] and "hold" not in plan


@pytest.mark.parametrize("version", ["13", "13.0.1.2", "v13.0", "thirteen"])
def test_a_bad_pin_fails_with_the_validate_message_and_plans_nothing(version: str) -> None:
    plan = _plan(_node(), gpu_cuda_toolkit_version=version)
    assert plan["failed"] == [
        f"gpu_cuda_toolkit_version={version}: versions.cuda must be <major>.<minor> (e.g. 12.8) or"
        " <major>.<minor>.<patch> (e.g. 12.8.1), the versions of NVIDIA's cuda-toolkit-<major>-<minor>"
        " packages."
    ]
    assert (plan["pending"], plan["todo"]) == ([], True)
    assert include_runs(ROLE, _node(), gpu_cuda_toolkit_version=version)


def test_the_role_reads_the_node_itself_without_the_shared_read_or_after_a_change() -> None:
    assert include_runs(ROLE, None)  # alone, or in image.yml
    assert include_runs(ROLE, _node(), __gpucluster_node_changed=True)


def test_the_pin_names_the_release_its_glob_and_the_read() -> None:
    names = _expression("__gpu_cuda_toolkit_names", gpu_cuda_toolkit_version="12.8.1")
    assert (names["package"], names["home"], names["version_glob"]) == (
        "cuda-toolkit-12-8",
        "/usr/local/cuda-12.8",
        "12.8.1-*",
    )
    assert _expression("__gpu_cuda_toolkit_names.version_glob") == "13.0.*"
    assert _expression("gpu_cuda_toolkit_node_query") == {
        "packages": True,
        "package_names": ["cuda*", "lib*-13-0"],
        "paths": [SOURCES, PREFERENCES, PROFILE],
    }


def test_the_files_keep_the_text_the_role_wrote_before_they_became_templates() -> None:
    """Changed text would rewrite every converged node's files (and reinstall at the pin) once."""
    assert _body("preferences", gpu_cuda_toolkit_version="12.8.1") == (
        "# Managed by Ansible (role gpu_cuda_toolkit): CUDA 12.8.1 as pinned in the cluster file.\n"
        "Package: /^cuda-.*-12-8(-.*)?$/\nPin: version 12.8.1-*\nPin-Priority: 1001\n"
    )
    assert _body("profile") == (
        "# Managed by Ansible (role gpu_cuda_toolkit): CUDA 13.0 as pinned in the cluster file.\n"
        "export CUDA_HOME=/usr/local/cuda-13.0\nexport PATH=/usr/local/cuda-13.0/bin:$PATH\n"
    )


def test_the_installed_version_is_checked_against_the_pin() -> None:
    check = filters("gpu_cuda_toolkit_plan.py")["gpu_cuda_toolkit_installed_version"]
    names = _expression("__gpu_cuda_toolkit_names", gpu_cuda_toolkit_version="12.8")
    assert check(names, ["cuda-toolkit-12-8 12.8.1-1", "libfoo 1"]) == {"version": "12.8.1-1", "pinned": True}
    assert check(names, ["cuda-toolkit-12-8 12.80.1-1"])["pinned"] is False
    assert check(names, []) == {"version": "none", "pinned": False}


def test_converge_runs_the_read_and_only_the_steps_the_plan_names() -> None:
    steps = converge_steps(ROLE, _node(held=[], files={PROFILE: None}))
    assert steps == [
        "Read the node's packages and CUDA files",
        "Mark the node changed in this play",
        "Hold every package of the toolkit release against upgrades",
        "Put the pinned toolkit on login shells' PATH",
    ]
    assert converge_steps(ROLE, _node()) == ["Read the node's packages and CUDA files"]
    install = converge_steps(ROLE, _node(files={PREFERENCES: None}))
    assert install[2].startswith("Install the toolkit at the pinned version from NVIDIA's apt repository")
    assert converge_steps(ROLE, _node(), gpu_cuda_toolkit_version="13")[0] == "Check the pinned CUDA version"
