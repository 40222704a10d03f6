"""monitoring_node_exporter's plan: what a converge does, from monitoring.enabled and the node state.

Rendered through the role's own vars (inputs, gpucluster.cluster.monitoring_node_exporter_plan) by Ansible's
templar, with node states as gpucluster.cluster.node_state answers them.
"""

from __future__ import annotations

from typing import Any

from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import ROCKY, node_state, role_expression

ROLE = "monitoring_node_exporter"
PACKAGE = "prometheus-node-exporter"


def _node(*, installed: bool = True, active: bool = True, enabled: bool = True) -> dict[str, Any]:
    return node_state(
        installed={PACKAGE: "1.5.0-1+b6"} if installed else {},
        services={PACKAGE: (active, enabled)},
    )


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = role_expression(
        ROLE, "__monitoring_node_exporter_plan", __monitoring_node_exporter_state=state, **overrides
    )
    return plan


def test_a_node_running_the_exporter_has_nothing_to_do_and_runs_one_task() -> None:
    plan = _plan(_node())
    assert (plan["pending"], plan["todo"], plan["failed"]) == ([], False, [])
    assert not include_runs(ROLE, _node())


def test_a_missing_package_is_installed_and_started() -> None:
    plan = _plan(_node(installed=False, active=False, enabled=False))
    assert plan["pending"] == ["install", "service"]
    assert converge_steps(ROLE, node_state(), monitoring_node_exporter_node_state={}) == [
        "Read the node's node exporter package and service",
        "Mark the node changed in this play",
        "Install Prometheus node exporter from the distribution",
        "Start node exporter",
        "Wait for node exporter to serve metrics",
    ]


def test_a_stopped_or_disabled_exporter_is_started_and_enabled_without_an_install() -> None:
    assert _plan(_node(active=False))["pending"] == ["service"]
    assert _plan(_node(enabled=False))["pending"] == ["service"]


def test_the_query_names_the_package_and_unit_and_without_a_shared_read_the_role_reads_itself() -> None:
    query = role_expression(ROLE, "monitoring_node_exporter_node_query")
    assert query == {"packages": True, "package_names": [PACKAGE], "services": [PACKAGE]}
    assert include_runs(ROLE, None)


def test_with_monitoring_off_the_role_reads_nothing_and_runs_one_skipped_task() -> None:
    off = {"monitoring_node_exporter_enabled": False}
    assert role_expression(ROLE, "monitoring_node_exporter_node_query", **off) == {}
    plan = _plan(node_state(), **off)
    assert (plan["pending"], plan["todo"]) == ([], False) and "monitoring.enabled" in plan["skipped"]
    assert not include_runs(ROLE, None, **off)


def test_another_os_family_is_refused_naming_it() -> None:
    plan = _plan(node_state(), ansible_facts=ROCKY)
    assert plan["todo"] and "RedHat" in plan["failed"][0] and "monitoring.enabled: false" in plan["failed"][0]
    assert role_expression(ROLE, "monitoring_node_exporter_node_query", ansible_facts=ROCKY) == {}
