"""Filters: what monitoring_node_exporter reads on a node, and what a converge of the role would change there.

`monitoring_node_exporter_names` needs no node state (the package, the unit, the node read, the input
check); `monitoring_node_exporter_plan` adds the node state and says which steps are pending
(tests/ansible/test_monitoring_node_exporter_plan.py).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    service_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import as_bool, failed_checks, plan

# Debian's package and unit (https://packages.debian.org/bookworm/prometheus-node-exporter): the unit
# reads /etc/default/prometheus-node-exporter and serves :9100 with the default collectors.
DEBIAN_PACKAGE = "prometheus-node-exporter"
DEBIAN_SERVICE = "prometheus-node-exporter"


def monitoring_node_exporter_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """The package and unit, the node read (nothing where monitoring is off); the failed check."""
    enabled = as_bool(inputs["enabled"])
    debian = inputs["os_family"] == "Debian"
    return {
        "enabled": enabled,
        "failed": failed_checks(
            [
                (
                    not enabled or debian,
                    f"monitoring_node_exporter installs Debian's {DEBIAN_PACKAGE}; this host's OS family is"
                    f" {inputs['os_family']}. Set monitoring.enabled: false in the cluster file (or"
                    " monitoring_node_exporter_enabled: false for this host) and run node exporter yourself.",
                )
            ]
        ),
        "package": DEBIAN_PACKAGE,
        "service": DEBIAN_SERVICE,
        "read": (
            {"packages": True, "package_names": [DEBIAN_PACKAGE], "services": [DEBIAN_SERVICE]}
            if enabled and debian
            else {}
        ),
    }


def monitoring_node_exporter_plan(inputs: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Steps: install (package missing), service (not active and enabled); none where monitoring is off."""
    names = monitoring_node_exporter_names(inputs)
    if names["failed"]:
        return plan(names["failed"])
    if not names["enabled"]:
        return plan([], skipped="monitoring is off for this host (monitoring.enabled: false)")
    return plan(
        [],
        {
            "install": len(packages_missing(state, [DEBIAN_PACKAGE])) > 0,
            "service": not service_current(state, DEBIAN_SERVICE),
        },
    )


class FilterModule:
    """gpucluster.cluster.monitoring_node_exporter_names and monitoring_node_exporter_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "monitoring_node_exporter_names": monitoring_node_exporter_names,
            "monitoring_node_exporter_plan": monitoring_node_exporter_plan,
        }
