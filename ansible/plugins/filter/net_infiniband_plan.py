"""Filters: what net_infiniband's inputs name, and what a converge of the role would change on a node.

`net_infiniband_names` needs no node state (the RDMA packages, the limits and IPoIB files, the node read,
the input checks); `net_infiniband_plan` adds the node state and says which steps are pending. Each step is
the `when` the role's tasks carried in Jinja before (tests/ansible/test_net_infiniband_plan.py).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    as_bool,
    as_int,
    failed_checks,
    matches,
    plan,
)

LIMITS = "/etc/security/limits.d/90-gpucluster-rdma.conf"
DOCA_DISTRIBUTIONS = ["Ubuntu", "Rocky", "RedHat"]


def _checks(inputs: dict[str, Any]) -> list[str]:
    host, address = inputs["host"], str(inputs["ipoib_address"])
    checks = [
        (
            address == "" or (matches(r"^[0-9.]+/[0-9]+$", address) and as_int(inputs["hca_count"]) > 0),
            f"{host}: net_infiniband_ipoib_address={address} must be ADDRESS/PREFIX (the host's ipoib_address"
            " in onprem.ipoib_cidr) on a node whose profile has HCAs.",
        )
    ]
    if inputs["stack"] == "doca-ofed":  # the distribution is read only for DOCA-OFED
        checks.append(
            (
                inputs["distribution"] in DOCA_DISTRIBUTIONS,
                f"{host} runs {inputs['distribution']}: set hcas.stack to rdma-core in its hardware profile,"
                " or run Ubuntu or Rocky/RHEL for DOCA-OFED.",
            )
        )
    return failed_checks(checks)


def net_infiniband_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """Whether the node wants the RDMA stack, its packages, the limits and IPoIB files, the read; checks."""
    wanted = as_int(inputs["hca_count"]) > 0 or as_bool(inputs["subnet_manager"])
    networkd = inputs["ipoib_backend"] == "networkd"
    interface = inputs["ipoib_interface"]
    packages = (
        ["rdma-core", "ibverbs-utils", "infiniband-diags"]
        if inputs["os_family"] == "Debian"
        else ["rdma-core", "libibverbs-utils", "infiniband-diags"]
    )
    ipoib_file = (
        f"/etc/systemd/network/60-gpucluster-{interface}.network"
        if networkd
        else f"/etc/NetworkManager/system-connections/gpucluster-{interface}.nmconnection"
    )
    has_address = inputs["ipoib_address"] != ""
    return {
        "failed": _checks(inputs),
        "full": inputs["install_mode"] == "full",
        # A node with HCAs needs the user space; the subnet manager host needs it for opensm.
        "wanted": wanted,
        "rdma_core_packages": packages,
        "limits_file": LIMITS,
        "ipoib_file": ipoib_file,
        "ipoib_mode": "0644" if networkd else "0600",
        "ipoib_template": "ipoib.network.j2" if networkd else "ipoib.nmconnection.j2",
        # nothing where no RDMA stack is wanted
        "read": {
            "packages": wanted,
            "package_names": packages if wanted else [],
            "paths": ([LIMITS] + ([ipoib_file] if has_address else [])) if wanted else [],
        },
    }


def net_infiniband_plan(
    inputs: dict[str, Any], state: dict[str, Any], bodies: dict[str, str]
) -> dict[str, Any]:
    """Steps: rdma-core (a package missing), doca-ofed, opensm, memlock and ipoib (the file differs).

    bodies: the limits and IPoIB files' text as the role writes them. Neither DOCA-OFED nor opensm has a state
    check: where asked for, their steps run on every converge.
    """
    names = net_infiniband_names(inputs)
    if names["failed"]:
        return plan(names["failed"])
    wanted, stack = names["wanted"], inputs["stack"]
    steps = {
        "rdma-core": wanted
        and stack == "rdma-core"
        and len(packages_missing(state, names["rdma_core_packages"])) > 0,
        "doca-ofed": wanted and stack == "doca-ofed",
        "opensm": as_bool(inputs["subnet_manager"]),
        "memlock": wanted and not state_current(state, LIMITS, bodies["limits"]),
        "ipoib": inputs["ipoib_address"] != ""
        and not state_current(state, names["ipoib_file"], bodies["ipoib"], mode=names["ipoib_mode"]),
    }
    return plan([], steps)


class FilterModule:
    """gpucluster.cluster.net_infiniband_names and net_infiniband_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"net_infiniband_names": net_infiniband_names, "net_infiniband_plan": net_infiniband_plan}
