"""gpucluster.cluster.node_state run by Ansible on this machine, and the filters that read its answer."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ansible.adhoc import one_line_result, run_module
from tests.ansible.filter_plugins import filters
from tests.conftest import ROOT

BIN = Path(sys.executable).parent


def _filters() -> dict[str, Any]:
    return filters("node_state_filters.py")


def _node_state(args: dict[str, Any], extra_env: dict[str, str]) -> dict[str, Any]:
    return one_line_result(run_module("gpucluster.cluster.node_state", args, "-o", env=extra_env))


def _collection_without_action_plugin(root: Path) -> dict[str, str]:
    """A copy of the collection that has the module but not its action plugin."""
    copy = root / "ansible_collections" / "gpucluster" / "cluster"
    (copy / "plugins" / "modules").mkdir(parents=True)
    shutil.copy(ROOT / "ansible/galaxy.yml", copy / "galaxy.yml")
    shutil.copy(ROOT / "ansible/plugins/modules/node_state.py", copy / "plugins/modules/node_state.py")
    return {"ANSIBLE_COLLECTIONS_PATH": str(root)}


# The action plugin runs the module file with plain Python; without it Ansible runs it as a module.
@pytest.mark.parametrize("plain_python", [True, False], ids=["plain-python", "ansiballz"])
def test_one_module_run_reads_files_texts_accounts_packages_and_services(
    tmp_path: Path, plain_python: bool
) -> None:
    extra_env = {} if plain_python else _collection_without_action_plugin(tmp_path / "collections")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    conf.chmod(0o640)
    (tmp_path / "a.sources").write_text("Suites: bookworm\n")
    (tmp_path / "b.sources").write_text("Suites: trixie\n")
    state = _node_state(
        {
            "paths": [str(conf), str(tmp_path), str(tmp_path / "missing")],
            "read": [str(tmp_path / "*.sources"), str(tmp_path / "absent.list")],
            "accounts": ["root", "no-such-account"],
            "services": ["no-such-unit"],
            "packages": True,
        },
        extra_env,
    )
    owner = state["files"][str(conf)]["owner"]
    assert state["files"][str(conf)] == {
        "exists": True,
        "type": "file",
        "mode": "0640",
        "owner": owner,
        "group": state["files"][str(conf)]["group"],
        "checksum": hashlib.sha1(b"ClusterName=t\n").hexdigest(),
    }
    assert state["files"][str(tmp_path)]["type"] == "directory"
    assert state["files"][str(tmp_path / "missing")] == {"exists": False}
    assert state["texts"] == {
        str(tmp_path / "a.sources"): "Suites: bookworm\n",
        str(tmp_path / "b.sources"): "Suites: trixie\n",
        str(tmp_path / "absent.list"): "",
    }
    assert state["users"]["root"]["uid"] == 0 and "no-such-account" not in state["users"]
    assert state["groups"]["root"] == {"gid": 0}
    assert "dpkg" in state["installed"]  # this machine is Debian
    # A unit that does not exist (or a machine without systemd) is reported as not running, so the
    # role's service task runs and reports the real error.
    assert state["services"]["no-such-unit"]["active"] is False


def test_the_filters_say_current_only_when_everything_matches() -> None:
    filters = _filters()
    current = filters["state_current"]
    body = "NodeName=n1\n"
    state = {
        "files": {
            "/etc/slurm/gres.conf": {
                "exists": True,
                "type": "file",
                "mode": "0644",
                "owner": "root",
                "group": "root",
                "checksum": hashlib.sha1(body.encode()).hexdigest(),
            },
            "/etc/slurm": {
                "exists": True,
                "type": "directory",
                "mode": "0755",
                "owner": "root",
                "group": "root",
            },
            "/etc/munge/munge.key": {
                "exists": True,
                "type": "file",
                "mode": "0600",
                "owner": "root",
                "group": "root",
            },
            "/gone": {"exists": False},
        },
        "services": {
            "munge": {"active": True, "enabled": True},
            "slurmd": {"active": True, "enabled": False},
        },
        "installed": ["munge", "slurmd"],
        "held": ["nvidia-smi"],
    }
    assert current(state, "/etc/slurm/gres.conf", body)
    assert not current(state, "/etc/slurm/gres.conf", body + "# edited\n")
    assert not current(state, "/etc/slurm/gres.conf", body, mode="0600")
    assert current(state, "/etc/slurm", kind="directory", mode="0755")
    assert not current(state, "/etc/slurm", kind="directory", owner="slurm", group="slurm", mode="0755")
    assert not current(state, "/etc/munge/munge.key", owner="munge", group="munge", mode="0400")
    assert (
        not current(state, "/gone") and not current(state, "/never-read") and not current(None, "/etc/slurm")
    )
    assert filters["service_current"](state, "munge")
    assert not filters["service_current"](state, "slurmd")  # running but not enabled
    assert filters["packages_missing"](state, ["munge", "slurm-client"]) == ["slurm-client"]
    assert filters["packages_unheld"](state, ["nvidia-smi", "libcuda1"]) == ["libcuda1"]


def test_packages_off_version_reads_dpkg_and_rpm_versions() -> None:
    off = _filters()["packages_off_version"]
    state = {
        "versions": {
            "nvidia-driver": "570.172.08-1",  # dpkg
            "libcuda1": "570.195.03-1",
            "nvidia-persistenced": "3:570.172.08-1.el9",  # rpm, with its epoch
            "libnvidia-ml1": "570.172.081-1",  # another release that merely starts alike
        }
    }
    wanted = ["nvidia-driver", "libcuda1", "nvidia-persistenced", "libnvidia-ml1", "nvidia-smi"]
    assert off(state, wanted, "570.172.08") == ["libcuda1", "libnvidia-ml1", "nvidia-smi"]
    assert off(None, ["nvidia-driver"], "570.172.08") == ["nvidia-driver"]


@pytest.mark.parametrize("plain_python", [True, False], ids=["plain-python", "ansiballz"])
def test_offers_read_what_apt_offers_and_not_offered_names_the_candidate(
    tmp_path: Path, plain_python: bool
) -> None:
    extra_env = {} if plain_python else _collection_without_action_plugin(tmp_path / "collections")
    # This machine's own apt sources (refreshed by `make rack-deps`): apt is offered, newest first.
    offered = _node_state({"offers": {"apt": "*"}}, extra_env)["offers"]["apt"]["versions"]
    assert offered
    state = _node_state(
        {"offers": {"dpkg": "*", "apt": "0.0.0-*", "no-such-package-x": "1.*"}},
        extra_env,
    )
    offers = state["offers"]
    assert offers["dpkg"]["pinned"] is True and offers["apt"]["versions"] == offered
    assert offers["apt"]["pinned"] is False
    assert offers["no-such-package-x"] == {"versions": [], "wanted": "1.*", "pinned": False}
    not_offered = _filters()["not_offered"](state)
    assert ["apt", offered[0], "0.0.0-*"] in not_offered and [
        "no-such-package-x",
        "nothing",
        "1.*",
    ] in not_offered
    assert "dpkg" not in [row[0] for row in not_offered]


def test_block_present_reads_what_blockinfile_wrote(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    marker = "# {mark} gpucluster t"
    block = "10.77.0.2 n1\n10.77.0.3 n2"
    result = run_module("ansible.builtin.blockinfile", {"path": str(hosts), "marker": marker, "block": block})
    assert result.returncode == 0, result.stdout + result.stderr
    present = _filters()["block_present"]
    state = {"texts": {str(hosts): hosts.read_text()}}
    assert present(state, str(hosts), marker, block)
    assert not present(state, str(hosts), marker, block + "\n10.77.0.4 n3")
    assert not present(state, str(hosts), "# {mark} gpucluster other", block)
    assert not present({"texts": {}}, str(hosts), marker, block)


def test_accounts_and_paths_differ_read_what_the_module_read_on_this_machine(tmp_path: Path) -> None:
    """The pending-step filters judge a real read: the right ids and paths are current, any other is not."""
    conf = tmp_path / "limits.conf"
    conf.write_text("* hard memlock unlimited\n")
    conf.chmod(0o644)
    state = _node_state(
        {
            "paths": [str(conf), str(tmp_path), str(tmp_path / "missing")],
            "accounts": ["root", "daemon", "no-such"],
        },
        {},
    )
    differ = _filters()["accounts_differ"]
    root = state["users"]["root"]
    daemon = {
        "name": "daemon",
        "uid": state["users"]["daemon"]["uid"],
        "gid": state["groups"]["daemon"]["gid"],
    }
    assert (
        differ(state, [{"name": "root", "id": 0, "home": root["home"], "shell": root["shell"]}, daemon]) == []
    )
    wrong = [
        {"name": "root", "id": 0, "shell": "/usr/sbin/nologin"},  # another shell
        {"name": "daemon", "uid": daemon["uid"], "gid": 4242},  # another group id
        {"name": "no-such", "id": 4243},  # missing
    ]
    assert differ(state, wrong) == wrong
    paths_differ = _filters()["paths_differ"]
    owner, group = state["files"][str(conf)]["owner"], state["files"][str(conf)]["group"]
    here = {"owner": owner, "group": group}
    current = [
        {"path": str(conf), "content": "* hard memlock unlimited\n", **here},
        {
            "path": str(tmp_path),
            "kind": "directory",
            "mode": f"{tmp_path.stat().st_mode & 0o7777:04o}",
            **here,
        },
        # a node-file record of the renderer: `path` is its template, `dest` the file on the node
        {"path": "security/limits.conf", "dest": str(conf), "content": "* hard memlock unlimited\n", **here},
    ]
    assert paths_differ(state, current) == []
    off = [
        {"path": str(conf), "content": "* hard memlock 8192\n", **here},
        {"path": str(conf), "mode": "0600", **here},
        {"path": str(tmp_path / "missing"), "kind": "directory", "mode": "0755"},
    ]
    assert paths_differ(state, off) == off


@pytest.mark.parametrize("plain_python", [True, False], ids=["plain-python", "ansiballz"])
def test_named_queries_read_once_give_each_query_its_own_answer(tmp_path: Path, plain_python: bool) -> None:
    """parts.<name> of one read with named queries is exactly what reading that query alone returns."""
    (tmp_path / "a.sources").write_text("Types: deb\n")
    (tmp_path / "b.conf").write_text("b\n")
    first = {
        "paths": [str(tmp_path / "b.conf"), str(tmp_path / "missing")],
        "read": [str(tmp_path / "*.sources")],
        "accounts": ["root"],
        "packages": True,
        "package_names": ["dpkg", "bash"],
    }
    second = {"paths": [str(tmp_path)], "read": [str(tmp_path / "b.conf")], "accounts": ["daemon"]}
    env = {} if plain_python else _collection_without_action_plugin(tmp_path / "collections")
    shared = _node_state({"queries": {"first": first, "second": second}}, env)
    compared = ("files", "texts", "services", "users", "groups", "installed", "held", "versions")
    for name, query in (("first", first), ("second", second)):
        alone = _node_state(query, env)
        part = shared["parts"][name]
        assert {key: part.get(key) for key in compared} == {key: alone.get(key) for key in compared}, name
    # the first query's packages were read for both, but the second's answer has none (it asked for none)
    assert set(shared["parts"]["first"]["versions"]) == {"dpkg", "bash"}
    assert "versions" not in shared["parts"]["second"]
    assert shared["query"]["holds"] == ["first", "second"]
