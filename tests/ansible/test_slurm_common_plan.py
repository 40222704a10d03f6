"""slurm_common's plan: what a converge does on a node, from the pin, the package source and its state.

Rendered through the role's own vars (inputs, template bodies, node files, the plan filter) by Ansible's
templar, so these test the role's wiring and the filter together.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import yaml

from tests.ansible.role_vars import (
    DEBIAN,
    ROCKY,
    ROLES,
    file_entry,
    node_state,
    role_expression,
    set_fact_expression,
)

ROLE = "slurm_common"
PIN = "24.11.5"
CLUSTER = "clusters/onprem-only.yaml"
KEY = "/etc/munge/munge.key"
CHRONY = "/etc/chrony/sources.d/gpucluster.sources"
MEMLOCK = "/etc/security/limits.d/90-gpucluster-memlock.conf"
SLURM_CONF = "/etc/slurm/slurm.conf"
MARKER = "# {mark} gpucluster onprem"
HOST = "h100-001"
KEY_SUM = hashlib.sha1(b"key").hexdigest()


def _inventory(**overrides: Any) -> dict[str, Any]:
    return {
        "inventory_hostname": HOST,
        "slurm_common_controller_host": "ctl",
        "hostvars": {"ctl": {"__slurm_common_own_read": {"files": {KEY: {"checksum": KEY_SUM}}}}, HOST: {}},
        "ansible_play_role_names": ["slurm_common", "slurm_node"],
        "slurm_common_slurm_version": PIN,
        "gpucluster_cluster_name": "onprem",
        "gpucluster_cluster_file": CLUSTER,
        "slurm_common_time_servers": ["ntp1"],
        **overrides,
    }


def _expression(expression: str, **overrides: Any) -> Any:
    return role_expression(ROLE, expression, **_inventory(**overrides))


FILES: list[dict[str, Any]] = _expression("__slurm_common_files")


def _node(client: str = "slurm-client", **change: Any) -> dict[str, Any]:
    """A converged node (Slurm at the pin and held, munge and chrony up), `change` applied."""
    bodies = _expression("__slurm_common_bodies")
    key = {**file_entry("key", mode="0400"), "owner": "munge", "group": "munge"}
    files: dict[str, Any] = {
        "/etc/slurm": file_entry(kind="directory", mode="0755"),
        "/var/log/slurm": {**file_entry(kind="directory", mode="0755"), "owner": "slurm", "group": "slurm"},
        KEY: key,
        CHRONY: file_entry(bodies["chrony_sources"]),
        MEMLOCK: file_entry(bodies["memlock"]),
    }
    texts = {}
    for record in FILES:
        if record["block"]:
            lines = [MARKER.replace("{mark}", "BEGIN"), *record["content"].splitlines()]
            texts[record["dest"]] = "127.0.0.1 localhost\n" + "\n".join(
                [*lines, MARKER.replace("{mark}", "END"), ""]
            )
            files[record["dest"]] = file_entry(texts[record["dest"]])
        else:
            texts[record["dest"]] = record["content"]
            files[record["dest"]] = file_entry(record["content"], mode=record["mode"])
    files.update(change.get("files", {}))
    texts.update(change.get("texts", {}))
    state = node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry],
        installed=change.get("installed", {client: f"{PIN}-1", "munge": "0.5.15-2", "chrony": "4.3-2"}),
        held=change.get("held", [client]),
        services={"munge": (True, True), "chrony": (True, True), **change.get("services", {})},
    )
    state["texts"] = texts
    ids = {"munge": 64031, "slurm": 64030, **change.get("ids", {})}
    homes = {"munge": "/nonexistent", "slurm": "/var/lib/slurm"}
    state["users"] = {
        name: {"uid": uid, "gid": uid, "home": homes[name], "shell": "/usr/sbin/nologin"}
        for name, uid in ids.items()
    }
    state["groups"] = {name: {"gid": uid} for name, uid in ids.items()}
    return state


def _plan(state: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    shared = {f"{ROLE}_node_state": state}
    plan: dict[str, Any] = _expression("__slurm_common_plan", **{**shared, **overrides})
    return plan


def _read_needed(state: dict[str, Any], **overrides: Any) -> bool:
    shared = {f"{ROLE}_node_state": state}
    needed = _expression("__slurm_common_read_needed", **{**shared, **overrides})
    assert isinstance(needed, bool), needed
    return needed


def test_a_converged_node_has_nothing_to_do_and_reads_nothing() -> None:
    plan = _plan(_node())
    assert (plan["pending"], plan["todo"], plan["failed"], plan["at_pin"]) == ([], False, [], True)
    assert plan["package_version"] == f"{PIN}-1"
    assert not _read_needed(_node())


def test_the_controller_always_reads_itself_and_a_node_after_a_change() -> None:
    assert _read_needed(_node(), inventory_hostname="ctl")
    assert _read_needed(_node(), __gpucluster_node_changed=True)
    assert _expression("__slurm_common_read_needed")  # no shared read in this play


@pytest.mark.parametrize(
    ("change", "pending"),
    [
        ({"ids": {"slurm": 999}}, ["accounts"]),
        ({"installed": {"slurm-client": f"{PIN}-1", "chrony": "4"}}, ["packages"]),
        ({"held": []}, ["packages"]),
        ({"installed": {"slurm-client": "22.05.8-4", "munge": "0.5", "chrony": "4"}}, ["packages"]),
        ({"files": {"/var/log/slurm": file_entry(kind="directory", mode="0755")}}, ["directories"]),
        ({"installed": {"slurm-client": f"{PIN}-1", "munge": "0.5"}}, ["chrony"]),
        ({"files": {CHRONY: file_entry("server other iburst\n")}}, ["chrony"]),
        ({"services": {"chrony": (False, True)}}, ["chrony"]),
        ({"files": {MEMLOCK: None}}, ["memlock"]),
        (
            {"files": {KEY: {**file_entry("other", mode="0400"), "owner": "munge", "group": "munge"}}},
            ["munge"],
        ),
        ({"files": {KEY: file_entry("key", mode="0400")}}, ["munge"]),
        ({"services": {"munge": (False, False)}}, ["munge"]),
        ({"texts": {"/etc/hosts": "127.0.0.1 localhost\n"}}, ["hosts"]),
    ],
    ids=str,
)
def test_each_difference_pends_its_own_step(change: dict[str, Any], pending: list[str]) -> None:
    assert _plan(_node(**change))["pending"] == pending


def test_a_chrony_unit_whose_start_condition_failed_counts_as_started() -> None:
    state = _node()
    state["services"]["chrony"] = {"active": False, "enabled": True, "condition_failed": True}
    assert _plan(state)["pending"] == []
    state["services"]["chrony"]["enabled"] = False
    assert _plan(state)["chrony_steps"] == {"install": False, "sources": False, "start": True}


def test_no_time_servers_keep_the_distributions_sources() -> None:
    assert _plan(_node(files={CHRONY: None}), slurm_common_time_servers=[])["pending"] == []


def test_an_unknown_controller_key_is_read_and_compared() -> None:
    assert _plan(_node(), hostvars={"ctl": {}, HOST: {}})["pending"] == ["munge"]


def test_a_new_job_user_is_created() -> None:
    users = [{"name": "alice", "uid": 2001, "gid": 2001}]
    plan = _plan(_node(), slurm_common_job_users=users)
    assert (plan["pending"], plan["job_users"], plan["ids"]) == (["accounts"], users, [])


def _slurm_conf_changed(old: str, new: str, version: str) -> dict[str, Any]:
    text = next(r["content"] for r in FILES if r["dest"] == SLURM_CONF).replace(new, old)
    installed = {"slurm-client": f"{version}-1", "munge": "0.5", "chrony": "4"}
    return _node(files={SLURM_CONF: file_entry(text)}, texts={SLURM_CONF: text}, installed=installed)


@pytest.mark.parametrize(
    ("version", "host", "actions", "handlers"),
    [
        ("22.05.8", "ctl", ["reconfigure", "slurmctld-restart"], ["Reconfigure Slurm", "Restart slurmctld"]),
        ("22.05.8", HOST, ["reconfigure", "slurmctld-restart"], ["Reconfigure Slurm"]),
        ("23.11.4", "ctl", ["reconfigure"], ["Reconfigure Slurm"]),
    ],
)
def test_a_nodename_hardware_change_restarts_slurmctld_before_23_11_on_the_controller_only(
    version: str, host: str, actions: list[str], handlers: list[str]
) -> None:
    state = _slurm_conf_changed("Gres=gpu:h100:4", "Gres=gpu:h100:8", version)
    plan = _plan(state, inventory_hostname=host, slurm_common_slurm_version=version)
    assert plan["pending"] == ["slurm-files"]
    (change,) = plan["slurm-files"]
    assert (change["dest"], sorted(change["actions"])) == (SLURM_CONF, actions)
    mapped = _expression(
        "__slurm_common_names.handlers", inventory_hostname=host, ansible_play_role_names=["slurm_common"]
    )
    assert [mapped[action] for action in sorted(change["actions"]) if mapped[action]] == handlers


def test_a_slurmd_restart_is_asked_for_only_where_slurm_node_runs_in_the_play() -> None:
    assert _expression("__slurm_common_names.handlers")["slurmd-drain-restart"] == "Restart slurmd"
    assert _expression("__slurm_common_names.handlers", ansible_play_role_names=["slurm_common"]) == {
        "reconfigure": "Reconfigure Slurm",
        "slurmctld-restart": "",
        "slurmd-drain-restart": "",
    }


@pytest.mark.parametrize(
    ("facts", "source", "client", "slurmd"),
    [
        (DEBIAN, "distribution", "slurm-client", "slurmd"),
        (DEBIAN, "site-repository", "slurm-smd-client", "slurm-smd-slurmd"),
        (DEBIAN, "upstream-release", "slurm-smd-client", "slurm-smd-slurmd"),
        (ROCKY, "distribution", "slurm", "slurm-slurmd"),
        (ROCKY, "site-repository", "slurm", "slurm-slurmd"),
    ],
)
def test_each_package_source_names_its_packages(
    facts: dict[str, str], source: str, client: str, slurmd: str
) -> None:
    names = _expression("__slurm_common_names", facts=facts, slurm_common_package_source=source)
    assert (names["packages"]["client"], names["packages"]["slurmd"]) == (client, slurmd)
    assert names["read"]["package_names"] == ["munge", "chrony", client]


def test_rocky_needs_no_apt_hold_to_be_at_the_pin() -> None:
    state = _node("slurm", installed={"slurm": f"{PIN}-1.el9", "munge": "0.5", "chrony": "4"}, held=[])
    assert _plan(state, facts=ROCKY)["at_pin"]
    assert not _plan(_node(held=[]))["at_pin"]


MADISON = (
    f"slurm-client | {PIN}-1 | http://deb.example/debian trixie/main amd64 Packages\n"
    "slurm-client | 22.05.8-4 | http://deb.example/debian bookworm/main amd64 Packages\n"
    f"slurm-client | {PIN}-1 | http://mirror.example trixie/main amd64 Packages\n"
)


def test_the_offer_is_read_from_apt_cache_madison_and_dnf() -> None:
    off_pin = _node(installed={"slurm-client": "22.05.8-4", "munge": "0.5", "chrony": "4"})
    plan = _plan(off_pin, __slurm_common_offered={"stdout": MADISON})
    assert (plan["offered_versions"], plan["offered_pin"]) == ([f"{PIN}-1", "22.05.8-4"], [f"{PIN}-1"])
    assert plan["package_version"] == f"{PIN}-1"
    dnf = f"slurm.x86_64  {PIN}-1.el9  slurm\nslurm.x86_64  {PIN}.1-1.el9  slurm\n"
    plan = _plan(off_pin, facts=ROCKY, __slurm_common_offered={"stdout": dnf})
    assert (plan["offered_versions"], plan["offered_pin"]) == (
        [f"{PIN}-1.el9", f"{PIN}.1-1.el9"],
        [f"{PIN}-1.el9"],
    )
    assert _plan(off_pin, __slurm_common_offered={"stdout": ""})["offered_pin"] == []


@pytest.mark.parametrize("offered", [MADISON, ""], ids=["offered", "none"])
def test_remember_version_publishes_the_plan_s_version_from_the_cheaper_filter(offered: str) -> None:
    """remember_version.yml runs on every converge: it reads slurm_common_version, not the whole plan."""
    for state in (_node(), _node(installed={"slurm-client": "22.05.8-4", "munge": "0.5", "chrony": "4"})):
        overrides = {f"{ROLE}_node_state": state, "__slurm_common_offered": {"stdout": offered}}
        plan = _plan(state, __slurm_common_offered={"stdout": offered})
        published = set_fact_expression(ROLE, "remember_version.yml", "slurm_common_package_version")
        assert _expression(published, **overrides) == plan["package_version"]
        packages = set_fact_expression(ROLE, "remember_version.yml", "slurm_common_slurm_packages")
        assert _expression(packages, **overrides) == _expression("__slurm_common_names.packages", **overrides)


def test_a_controller_outside_the_inventory_fails_with_the_validate_message() -> None:
    plan = _plan(_node(), hostvars={HOST: {}})
    assert plan["failed"] == [
        "slurm_common_controller_host=ctl is not an inventory host; run with the cluster file as inventory"
        " (ansible-playbook -i clusters/NAME.yaml) so the controller is known."
    ]
    assert (plan["pending"], plan["todo"]) == ([], True)
    assert _read_needed(_node(), hostvars={HOST: {}})


def test_the_node_image_plans_without_a_controller_or_node_files() -> None:
    image = {"__slurm_common_image": True, "__slurm_common_files": [], "slurm_common_controller_host": ""}
    state = node_state(installed={"munge": "0.5"})
    plan = _expression(
        "__slurm_common_plan", __slurm_common_state=state, __slurm_common_controller_key_known="", **image
    )
    assert plan["failed"] == []
    assert {"accounts", "packages", "directories"} <= set(plan["pending"])
    assert "hosts" not in plan["pending"] and plan["slurm-files"] == []


def test_the_files_keep_the_text_the_role_wrote_before_they_became_templates() -> None:
    bodies = _expression("__slurm_common_bodies", slurm_common_time_servers=["ntp1", "ntp2"])
    assert bodies == {
        "chrony_sources": "# Written by gpucluster (cluster file onprem.time_servers).\n"
        "server ntp1 iburst\nserver ntp2 iburst\n",
        "memlock": "# Written by gpucluster (role slurm_common): RDMA needs unlimited locked memory.\n"
        "*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n",
    }
    release = _expression("lookup('ansible.builtin.template', 'slurm-release.sources.j2')")
    assert release == (
        "# Managed by Ansible (role slurm_common): the Slurm packages built from the release tarball.\n"
        "# Trusted without a signature: root-owned files on the node, built from a tarball checked"
        " against its sha256.\nTypes: deb\nURIs: file:/var/lib/gpucluster/slurm-release/repo\n"
        "Suites: /\nTrusted: yes\n"
    )
    site = _expression(
        "lookup('ansible.builtin.template', 'slurm.sources.j2')",
        slurm_common_package_repository="https://repo.example/slurm",
        slurm_common_package_signing_key="https://repo.example/key.gpg",
    )
    assert site == (
        "# Managed by Ansible (role slurm_common): the site's Slurm package repository.\nTypes: deb\n"
        "URIs: https://repo.example/slurm\nSuites: /\nSigned-By: /etc/apt/keyrings/slurm.gpg\n"
    )


def test_the_image_entry_point_plans_without_a_cluster() -> None:
    """playbooks/image.yml has no inventory plugin: no cluster name or file, only the image block's vars."""
    block = yaml.safe_load((ROLES / ROLE / "tasks" / "image.yml").read_text())[0]["vars"]
    read = node_state(installed={}, held=[])
    plan = role_expression(
        ROLE,
        "__slurm_common_plan",
        hostvars={"n1": {}},
        ansible_play_role_names=[ROLE],
        **block,
        __slurm_common_own_read=read,
    )
    assert "packages" in plan["pending"] and not plan["failed"], plan
