"""net_efa's plan: what a converge does on a node, from the pins, the installer's record and the packages.

Rendered through the role's own vars (inputs, gpucluster.cluster.net_efa_plan) by Ansible's templar, so
these test the role's wiring and the filter together; the installer check is called as Ansible loads it.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.ansible.filter_plugins import filters
from tests.ansible.role_vars import DEBIAN, ROCKY, ROLES, node_state, role_expression

ROLE = "net_efa"
RECORD = "/opt/amazon/efa_installed_packages"
PINS = {"net_efa_installer_version": "1.51.0", "net_efa_aws_ofi_nccl_version": "1.22.0"}
PACKAGES = ["efa", "ibacm", "libfabric-aws-bin", "libnccl-ofi"]
UBUNTU = {
    **DEBIAN,
    "distribution": "Ubuntu",
    "distribution_major_version": "24",
    "distribution_version": "24.04",
}


def _record(version: str = "1.51.0", packages: list[str] = PACKAGES) -> str:
    return f"# EFA installer version: {version}\n" + "".join(f"{name}_1.0-1_amd64\n" for name in packages)


def _node(record: str | None = None, plugin: str = "1.22.0-1", held: list[str] = PACKAGES) -> dict[str, Any]:
    """A node the installer converged at both pins, every package held, with the given changes."""
    state = node_state(installed={**dict.fromkeys(PACKAGES, "1.0-1"), "libnccl-ofi": plugin}, held=held)
    text = _record() if record is None else record
    state["texts"] = {RECORD: text} if text else {}
    return state


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **{**PINS, **overrides})


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__net_efa_plan", __net_efa_state=state, **overrides)
    return plan


def _main(**variables: Any) -> list[str]:
    """The names of tasks/main.yml's tasks whose `when` holds."""
    tasks = yaml.safe_load((ROLES / ROLE / "tasks" / "main.yml").read_text())
    return [task["name"] for task in tasks if _expression(str(task["when"]), **variables) in (True, "True")]


def test_a_node_at_both_pins_with_every_package_held_has_nothing_to_do() -> None:
    plan = _plan(_node())
    assert (plan["pending"], plan["todo"], plan["failed"], plan["hold"]) == ([], False, [], [])
    assert plan["installed_version"] == "1.51.0" and plan["recorded"] == PACKAGES


def test_a_converged_node_runs_the_read_and_skips_the_converge() -> None:
    assert _main(__net_efa_own_read=_node()) == ["Read the EFA installer's record and the installed packages"]


def test_a_shared_read_holding_the_roles_query_spares_the_read() -> None:
    shared = {f"{ROLE}_node_state": _node()}
    assert _main(**shared) == []
    behind = {f"{ROLE}_node_state": _node(record="")}
    assert _main(**behind, __net_efa_own_read={"skipped": True, "changed": False}) == [
        "Converge the EFA installer and aws-ofi-nccl where the node is not at both pins, held"
    ]
    assert _expression("__net_efa_reads_itself | bool", **shared, __gpucluster_node_changed=True)


@pytest.mark.parametrize(
    "node",
    [_node(record=""), _node(record=_record("1.50.0")), _node(plugin="1.21.0-1"), _node(plugin="")],
    ids=["no-installer", "other-installer", "other-plugin", "no-plugin"],
)
def test_a_node_off_either_pin_runs_the_installer(node: dict[str, Any]) -> None:
    assert _plan(node)["pending"][0] == "install"


@pytest.mark.parametrize("plugin", ["1.22.0", "1.22.0-1", "1:1.22.0-1ubuntu1", "1.22.0~rc1", "1.22.0+aws2"])
def test_a_plugin_version_whose_upstream_part_is_the_pin_is_at_the_pin(plugin: str) -> None:
    assert _plan(_node(plugin=plugin))["pending"] == []


@pytest.mark.parametrize("plugin", ["1.22.01", "1.22", "11.22.0", "1.22.0.1"])
def test_a_plugin_version_that_only_starts_like_the_pin_is_not(plugin: str) -> None:
    assert _plan(_node(plugin=plugin))["pending"] == ["install"]


def test_an_unheld_package_is_held_without_running_the_installer_again() -> None:
    plan = _plan(_node(held=["efa", "libnccl-ofi"]))
    assert (plan["pending"], plan["hold"]) == (["hold"], ["ibacm", "libfabric-aws-bin"])


def test_after_an_install_the_hold_and_the_check_read_the_node_again() -> None:
    before = _node(record="", held=[])
    plan = _plan(before, __net_efa_after=_node(held=["efa"]))
    assert plan["pending"] == ["install", "hold"] and plan["hold"] == PACKAGES[1:]
    assert plan["unverified"] == ""
    wrong = _plan(before, __net_efa_after=_node(record=_record("1.50.0")))["unverified"]
    assert wrong.startswith(f"The EFA installer ran, but {RECORD} or libnccl-ofi does not show")
    assert _plan(before, __net_efa_after=_node(plugin="1.21.0-1"))["unverified"] != ""


@pytest.mark.parametrize(
    "overrides, facts",
    [
        ({"net_efa_installer_version": "1.51"}, DEBIAN),
        ({"net_efa_aws_ofi_nccl_version": "v1.22.0"}, DEBIAN),
        ({"net_efa_installer_version": ""}, DEBIAN),
        ({}, ROCKY),
    ],
    ids=["installer", "plugin", "empty", "rocky"],
)
def test_a_bad_pin_or_a_non_apt_os_fails_the_check(overrides: dict[str, Any], facts: dict[str, Any]) -> None:
    plan = _plan(_node(), ansible_facts=facts, **overrides)
    assert plan["todo"] and plan["pending"] == [] and plan["hold"] == []
    (message,) = plan["failed"]
    assert "must be <major>.<minor>.<patch> (e.g. 1.51.0 and 1.22.0)" in message
    assert f"on {facts['distribution']}:" in message


@pytest.mark.parametrize(
    "facts, directory",
    [
        (DEBIAN, "DEBS/DEBIAN12/x86_64"),
        (UBUNTU, "DEBS/UBUNTU2404/x86_64"),
        ({**UBUNTU, "distribution_version": "22.04", "architecture": "aarch64"}, "DEBS/UBUNTU2204/aarch64"),
        (ROCKY, "RPMS/ROCKY9/x86_64"),
    ],
)
def test_the_installers_package_directory_for_the_os(facts: dict[str, Any], directory: str) -> None:
    assert _expression("__net_efa_names.os_dir", ansible_facts=facts) == directory
    assert _expression("__net_efa_names.unpacked") == "/var/tmp/gpucluster-efa/aws-efa-installer"


INPUTS = {
    "installer_version": "1.51.0",
    "aws_ofi_nccl_version": "1.22.0",
    "aws_ofi_nccl_package": "libnccl-ofi",
    "installer_url": "https://example.org/efa.tar.gz",
    "workdir": "/w",
    **{key: DEBIAN[key] for key in ("os_family", "distribution", "architecture")},
    "distribution_major_version": "12",
    "distribution_version": "12.11",
}
ENV_SH = 'export EFA_INSTALLER_VERSION="1.51.0"\n'


def test_the_pinned_installer_bundling_the_pinned_plugin_passes() -> None:
    check = filters("net_efa_plan.py")["net_efa_installer_check"]
    assert check(INPUTS, ENV_SH, "1.22.0-1") == ""
    assert check(INPUTS, "EFA_INSTALLER_VERSION=1.51.0\n", "1:1.22.0") == ""


@pytest.mark.parametrize(
    "env_sh, bundled, says",
    [
        (
            'EFA_INSTALLER_VERSION="1.50.0"',
            "1.22.0-1",
            "is EFA installer 1.50.0 and bundles libnccl-ofi 1.22.0-1",
        ),
        ("# nothing", "1.22.0-1", "is EFA installer (no version in env.sh)"),
        (ENV_SH, "1.21.0-1", "bundles libnccl-ofi 1.21.0-1 for DEBS/DEBIAN12/x86_64"),
        (ENV_SH, "", "bundles libnccl-ofi in no version for DEBS/DEBIAN12/x86_64"),
    ],
    ids=["other-installer", "no-version", "other-plugin", "no-plugin"],
)
def test_an_installer_off_the_pin_is_refused_before_anything_is_installed(
    env_sh: str, bundled: str, says: str
) -> None:
    message = filters("net_efa_plan.py")["net_efa_installer_check"](INPUTS, env_sh, bundled)
    assert message.startswith(
        "versions.efa_installer pins 1.51.0 and versions.aws_ofi_nccl 1.22.0, but https://example.org/efa.tar.gz"
    )
    assert says in message and message.endswith("Nothing was installed.")
