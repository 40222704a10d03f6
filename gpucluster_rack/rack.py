"""A test rack: N Debian 12 nodes booted with systemd-nspawn on one machine, reachable over SSH.

State lives in /var/lib/gpucluster-rack/<rack>/; `down()` removes every process (by PID), mount,
namespace and cgroup directory it made, and `up()` first clears whatever a killed run left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gpucluster_rack.image import ensure_image
from gpucluster_rack.network import (
    SUBNET_PREFIX,
    bridge_ns,
    create_bridge,
    create_node_ns,
    delete_ns,
    node_address,
    node_ns,
    rack_namespaces,
)
from gpucluster_rack.node import (
    Node,
    boot,
    cleanup_mounts_and_cgroups,
    kill_leftovers,
    mount_root,
    personalise,
    remove_cgroup_dirs,
)
from gpucluster_rack.proxy import apt_proxy_url, start_proxy
from gpucluster_rack.rack_cluster import rack_cluster_file
from gpucluster_rack.sh import progress, run

STATE_ROOT = Path("/var/lib/gpucluster-rack")


@dataclass
class Rack:
    """A running (or stopped) test rack; node 0 is the Slurm controller."""

    name: str = "t"
    size: int = 4
    gpus_per_node: int = 8
    # Nodes the cluster file declares (default: all); the others boot as spare nodes a test can add.
    declared: int | None = None
    # Compute node numbers (default 1 … size-1): (1, 3) boots n1 and n3, a rack with a retired node's gap.
    numbers: tuple[int, ...] = ()
    pids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.numbers and len(self.numbers) != self.size - 1:
            raise ValueError(f"rack {self.name}: {len(self.numbers)} node numbers for {self.size - 1} nodes")

    @property
    def state(self) -> Path:
        """This rack's state directory."""
        return STATE_ROOT / self.name

    @property
    def node_names(self) -> list[str]:
        """ctl, then n<number> for each compute node (n1 … n<size-1> by default)."""
        return ["ctl", *(f"n{i}" for i in (self.numbers or range(1, self.size)))]

    def node(self, index: int) -> Node:
        """The index-th node."""
        name = self.node_names[index]
        return Node(self.name, name, node_address(index), self.state / "nodes" / name)

    @property
    def ssh_config(self) -> Path:
        """ssh_config with an entry per node (use inside the bridge namespace)."""
        return self.state / "ssh_config"

    @property
    def cluster_file(self) -> Path:
        """The cluster file describing this rack (same schema as clusters/*.yaml)."""
        return self.state / "cluster.yaml"

    def up(self) -> None:
        """Boot the rack (clearing a stale one first) and wait until every node answers SSH."""
        down(self.name)
        image = ensure_image()
        self.state.mkdir(parents=True, exist_ok=True)
        key = self._ssh_key()
        progress(f"rack {self.name}: network, apt proxy and {self.size} nodes")
        create_bridge(self.name)
        self.pids.update({f"proxy{i}": pid for i, pid in enumerate(start_proxy(self.state, self.name))})
        self.save()
        for index in range(self.size):
            node = self.node(index)
            create_node_ns(self.name, node.name, index)
            mount_root(node, image)
            personalise(node, key, apt_proxy_url(), self.gpus_per_node if index else 0)
            self.pids[node.name] = boot(node)
            self.save()
        self._write_access_files()
        self.wait_for_ssh()
        progress(f"rack {self.name}: {self.size} nodes answer SSH")

    def ssh(self, node: str, command: str, *, check: bool = True, timeout: float = 120) -> str:
        """Run a shell command on a node as root; return stdout."""
        result = run(
            ["ip", "netns", "exec", bridge_ns(self.name), "ssh", "-F", str(self.ssh_config), node, command],
            check=check,
            quiet=True,
            timeout=timeout,
        )
        return result.stdout

    def in_bridge(
        self, args: list[str], *, env: dict[str, str] | None = None, timeout: float = 1800
    ) -> tuple[int, str]:
        """Run a host command inside the bridge namespace (Ansible runs this way)."""
        full_env = {**os.environ, **(env or {})}
        result = subprocess.run(
            ["ip", "netns", "exec", bridge_ns(self.name), *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
        return result.returncode, result.stdout + result.stderr

    def wait_for_ssh(self, names: list[str] | None = None, timeout_s: float = 300) -> None:
        """Block until the named nodes (default: all) run sshd.

        CI boots six racks at once on two cores (make demo beside make test), so the bound is generous; a
        node that cannot boot (node.allow_many_nodes says what stopped them once) still fails here.
        """
        deadline = time.monotonic() + timeout_s
        for name in names or self.node_names:
            while (
                run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        bridge_ns(self.name),
                        "ssh",
                        "-F",
                        str(self.ssh_config),
                        "-o",
                        "ConnectTimeout=2",
                        name,
                        "true",
                    ],
                    check=False,
                    quiet=True,
                ).returncode
                != 0
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {name} did not answer SSH within {timeout_s:.0f} s")
                time.sleep(0.5)

    def stop_node(self, name: str) -> None:
        """Power a node off (clean shutdown) but keep its disk, for down-node tests."""
        terminate(self.pids.pop(name, 0))
        kill_leftovers(self.node(self.node_names.index(name)))
        self.save()

    def start_node(self, name: str) -> None:
        """Boot a stopped node again and wait for SSH."""
        node = self.node(self.node_names.index(name))
        remove_cgroup_dirs(node)
        self.pids[name] = boot(node)
        self.save()
        self.wait_for_ssh([name])

    def ansible_env(self) -> dict[str, str]:
        """Environment for ansible-playbook against this rack (run through in_bridge)."""
        return {
            "ANSIBLE_SSH_ARGS": f"-F {self.ssh_config} -o ControlMaster=auto -o ControlPersist=60s",
            "ANSIBLE_REMOTE_USER": "root",
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            # Every rack uses the same node addresses: per-rack control sockets keep ssh from
            # reusing a connection to another rack's node.
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.state / "ssh-control"),
        }

    def _ssh_key(self) -> str:
        key = self.state / "id_ed25519"
        if not key.exists():
            run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    f"gpucluster-rack-{self.name}",
                    "-f",
                    str(key),
                ]
            )
        return key.with_suffix(".pub").read_text()

    def _write_access_files(self) -> None:
        entries = [
            f"Host {self.node(i).name}\n  HostName {self.node(i).address}\n  User root\n"
            f"  IdentityFile {self.state / 'id_ed25519'}\n  StrictHostKeyChecking no\n"
            "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
            for i in range(self.size)
        ]
        entries.append(
            f"Host {SUBNET_PREFIX}.*\n  User root\n  IdentityFile {self.state / 'id_ed25519'}\n"
            "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        self.ssh_config.write_text("".join(entries))
        cluster = rack_cluster_file(
            self.name,
            [(self.node(i).name, self.node(i).address) for i in range(self.declared or self.size)],
            self.gpus_per_node,
        )
        self.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))

    def save(self) -> None:
        """Record the PIDs and nodes, so `down()` can end them even after a killed run."""
        record = {"size": self.size, "pids": self.pids, "nodes": self.node_names}
        (self.state / "rack.json").write_text(json.dumps(record))


def terminate(pid: int, timeout_s: float = 30) -> None:
    """SIGTERM a process we started (nspawn shuts its node down cleanly), SIGKILL if it lingers."""
    if pid <= 0 or not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _status(pid)


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


def down(name: str = "t") -> None:
    """Tear a rack down completely, also one left behind by a killed run."""
    state = STATE_ROOT / name
    record = json.loads((state / "rack.json").read_text()) if (state / "rack.json").exists() else {}
    pids: dict[str, int] = record.get("pids", {})
    nodes = [p for p in pids if not p.startswith("proxy")]
    for node in nodes:
        terminate(pids[node])
    for proxy in [p for p in pids if p.startswith("proxy")]:
        terminate(pids[proxy], timeout_s=5)
    node_dirs = sorted((state / "nodes").glob("*")) if (state / "nodes").exists() else []
    for directory in node_dirs:
        cleanup_mounts_and_cgroups(Node(name, directory.name, "", directory))
    for ns in rack_namespaces(name):
        delete_ns(ns)
    for hierarchy in ("systemd", "unified"):
        rack_cgroup = Path(f"/sys/fs/cgroup/{hierarchy}/gcr-{name}")
        if rack_cgroup.exists():
            rack_cgroup.rmdir()
    if state.exists():
        shutil.rmtree(state)
    if nodes or node_dirs:
        progress(f"rack {name}: torn down")


__all__ = ["Rack", "down", "node_ns", "terminate"]
