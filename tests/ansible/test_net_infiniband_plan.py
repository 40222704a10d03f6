"""net_infiniband's plan: what a converge does on a node, from its HCAs, stack, IPoIB address and state.

Rendered through the role's own vars (inputs, template bodies, gpucluster.cluster.net_infiniband_plan) by
Ansible's templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.role_plans import converge_steps, include_runs
from tests.ansible.role_vars import DEBIAN, ROCKY, file_entry, node_state, role_expression

ROLE = "net_infiniband"
LIMITS = "/etc/security/limits.d/90-gpucluster-rdma.conf"
NETWORK = "/etc/systemd/network/60-gpucluster-ib0.network"
KEYFILE = "/etc/NetworkManager/system-connections/gpucluster-ib0.nmconnection"
PACKAGES = ["rdma-core", "ibverbs-utils", "infiniband-diags"]
NODE = {"net_infiniband_hca_count": 8, "net_infiniband_ipoib_address": "10.78.0.12/24"}


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **{**NODE, **overrides})


def _node(**change: Any) -> dict[str, Any]:
    """A node with 8 HCAs and an IPoIB address, converged (rdma-core, networkd), `change` applied."""
    files = {
        LIMITS: file_entry(_expression("__net_infiniband_bodies.limits")),
        NETWORK: file_entry(_expression("__net_infiniband_bodies.ipoib")),
        **change.get("files", {}),
    }
    return node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=dict.fromkeys(change.get("installed", PACKAGES), "44.0-2"),
    )


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = _expression("__net_infiniband_plan", __net_infiniband_state=state, **overrides)
    return plan


@pytest.mark.parametrize("mode", ["full", "userspace"])
def test_a_converged_node_has_nothing_to_do_and_runs_one_task(mode: str) -> None:
    plan = _plan(_node(), net_infiniband_install_mode=mode)
    assert (plan["pending"], plan["todo"], plan["failed"]) == ([], False, [])
    assert not include_runs(ROLE, _node(), **NODE, net_infiniband_install_mode=mode)


def test_a_node_without_hcas_wants_nothing_and_reads_nothing() -> None:
    plain = {"net_infiniband_hca_count": 0, "net_infiniband_ipoib_address": ""}
    assert _expression("net_infiniband_node_query", **plain) == {
        "packages": False,
        "package_names": [],
        "paths": [],
    }
    assert not include_runs(ROLE, None, **plain)  # no shared read, and nothing to read
    assert not include_runs(ROLE, {"files": {}}, **plain)


@pytest.mark.parametrize("missing", PACKAGES)
def test_a_missing_rdma_package_is_installed(missing: str) -> None:
    installed = [name for name in PACKAGES if name != missing]
    assert _plan(_node(installed=installed))["pending"] == ["rdma-core"]


@pytest.mark.parametrize("limits", [None, file_entry("*    hard    memlock    65536\n"), "mode"], ids=str)
def test_a_missing_or_different_memlock_limit_is_written(limits: Any) -> None:
    entry = (
        file_entry(_expression("__net_infiniband_bodies.limits"), mode="0600") if limits == "mode" else limits
    )
    assert _plan(_node(files={LIMITS: entry}))["pending"] == ["memlock"]


def test_a_different_ipoib_address_is_written() -> None:
    other = _expression("__net_infiniband_bodies.ipoib", net_infiniband_ipoib_address="10.78.0.99/24")
    assert _plan(_node(files={NETWORK: file_entry(other)}))["pending"] == ["ipoib"]


def test_networkmanager_keeps_its_keyfile_private() -> None:
    manager = {"net_infiniband_ipoib_backend": "NetworkManager"}
    body = _expression("__net_infiniband_bodies.ipoib", **manager)
    assert "[infiniband]\ntransport-mode=datagram\n" in body
    world_readable = _node(files={NETWORK: None, KEYFILE: file_entry(body)})
    assert _plan(world_readable, **manager)["pending"] == ["ipoib"]
    private = _node(files={NETWORK: None, KEYFILE: file_entry(body, mode="0600")})
    assert _plan(private, **manager)["pending"] == []


def test_doca_ofed_and_opensm_have_no_state_check_and_run_on_every_converge() -> None:
    ubuntu = {**DEBIAN, "distribution": "Ubuntu", "distribution_version": "24.04"}
    assert _plan(_node(), net_infiniband_stack="doca-ofed", facts=ubuntu)["pending"] == ["doca-ofed"]
    assert _plan(_node(), net_infiniband_subnet_manager=True)["pending"] == ["opensm"]


def test_the_subnet_manager_host_without_hcas_wants_the_user_space() -> None:
    manager = {
        "net_infiniband_hca_count": 0,
        "net_infiniband_ipoib_address": "",
        "net_infiniband_subnet_manager": "yes",
    }
    state = _node(files={NETWORK: None})
    assert _plan(state, **manager)["pending"] == ["opensm"]
    assert include_runs(ROLE, None, **manager)  # alone it reads the node itself


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"net_infiniband_ipoib_address": "10.78.0.12"},
            "n1: net_infiniband_ipoib_address=10.78.0.12 must be ADDRESS/PREFIX (the host's ipoib_address in"
            " onprem.ipoib_cidr) on a node whose profile has HCAs.",
        ),
        (
            {"net_infiniband_hca_count": 0},
            "n1: net_infiniband_ipoib_address=10.78.0.12/24 must be ADDRESS/PREFIX (the host's ipoib_address"
            " in onprem.ipoib_cidr) on a node whose profile has HCAs.",
        ),
        (
            {"net_infiniband_stack": "doca-ofed"},
            "n1 runs Debian: set hcas.stack to rdma-core in its hardware profile, or run Ubuntu or Rocky/RHEL"
            " for DOCA-OFED.",
        ),
    ],
)
def test_bad_inputs_fail_with_the_validate_message_and_plan_nothing(
    overrides: dict[str, Any], message: str
) -> None:
    plan = _plan(_node(), **overrides)
    assert (plan["failed"], plan["pending"], plan["todo"]) == ([message], [], True)
    assert include_runs(ROLE, _node(), **{**NODE, **overrides})


def test_rocky_reads_its_own_package_names_and_a_keyfile() -> None:
    names = _expression("__net_infiniband_names", facts=ROCKY, net_infiniband_ipoib_backend="NetworkManager")
    assert names["rdma_core_packages"] == ["rdma-core", "libibverbs-utils", "infiniband-diags"]
    assert (names["ipoib_file"], names["ipoib_mode"]) == (KEYFILE, "0600")


def test_the_role_reads_the_node_itself_without_the_shared_read_or_after_a_change() -> None:
    assert include_runs(ROLE, None, **NODE)
    assert include_runs(ROLE, _node(), **NODE, __gpucluster_node_changed=True)


def test_the_files_keep_the_text_the_role_wrote_before_they_became_templates() -> None:
    assert _expression("__net_infiniband_bodies.limits") == (
        "# Managed by Ansible (role net_infiniband): RDMA pins memory.\n"
        "*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n"
    )
    assert _expression("__net_infiniband_bodies.ipoib", gpucluster_cluster_file="rack.yaml") == (
        "# Managed by Ansible (role net_infiniband) from cluster file rack.yaml; do not edit.\n"
        "[Match]\nName=ib0\n\n[Network]\nAddress=10.78.0.12/24\n"
    )


def test_converge_runs_the_read_and_only_the_steps_the_plan_names() -> None:
    state = _node(files={LIMITS: None}, installed=PACKAGES[:1])
    assert converge_steps(ROLE, state, **NODE) == [
        "Read the node's RDMA packages, limits file and IPoIB address",
        "Mark the node changed in this play",
        "Install rdma-core and the InfiniBand diagnostics",
        "Allow unlimited locked memory for RDMA",
    ]
    manager = {"net_infiniband_subnet_manager": True, "net_infiniband_install_mode": "userspace"}
    assert converge_steps(ROLE, _node(), **NODE, **manager) == [
        "Read the node's RDMA packages, limits file and IPoIB address",
        "Mark the node changed in this play",
        "Install opensm on the subnet manager host",
        "Keep opensm stopped where there is no fabric to manage",
    ]
