"""The one table of node files: what each rendered file is, where it lands, and what a change needs.

The renderer, the render lookup the roles use, the roles' handlers (through the `node_file_changes`
filter), the cloud-init template and the review's classifier all read this table, so what the review
predicts is what the converge does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal

from gpucluster.clusterfile.hostlist import compress, expand
from gpucluster.names import PROMETHEUS_RULES

Scope = Literal["shared", "onprem", "group", "cloud", "controller"]


class Action(StrEnum):
    """What a node must do after one of its files changed, cheapest first."""

    NONE = "none"  # read when used: new jobs, new processes or new instances pick it up
    RECONFIGURE = "reconfigure"  # `scontrol reconfigure`: slurmctld and every slurmd re-read their files
    SLURMD_DRAIN_RESTART = "slurmd-drain-restart"  # drain the node, wait for its jobs, restart, resume
    SLURMCTLD_RESTART = "slurmctld-restart"  # restart slurmctld on the controller (running jobs survive)


@dataclass(frozen=True)
class Change:
    """One file as it is on a node (None: absent) and as the cluster file renders it now."""

    old: str | None
    new: str | None
    host: str
    slurm_version: str


@dataclass(frozen=True)
class NodeFile:
    """One rendered file: its template, where it lands, who writes it, and what a change needs."""

    path: str  # the renderer's name for it, e.g. slurm/slurm.conf (template templates/<path>.j2)
    destination: str
    scope: Scope
    role: str  # the Ansible role that writes it on racks
    needs: Callable[[Change], frozenset[Action]]
    owner: str = "root"
    group: str = "root"
    mode: str = "0644"
    managed_block: bool = False  # written as a marked block inside a file the OS owns
    also: tuple[str, ...] = ()  # further roles that write it (the controller serves configless files)
    # slurmctld serves it to configless slurmd (cloud nodes fetch it, never carry it):
    # https://slurm.schedmd.com/configless_slurm.html
    configless: bool = False
    comment: str = "#"  # how the generated-file header comments itself out

    @property
    def label(self) -> str:
        """Where it lands, as a review names it."""
        return f"{self.destination} (managed block)" if self.managed_block else self.destination

    @property
    def template(self) -> str:
        """The template, relative to templates/."""
        return f"{self.path}.j2"


# slurm.conf keys whose change needs slurmctld restarted, not `scontrol reconfigure`:
# https://slurm.schedmd.com/scontrol.html#OPT_reconfigure
# JobSubmitPlugins: older releases' reconfigure reloads the list only when the old and the new are both set
# (src/slurmctld/job_submit.c, job_submit_plugin_reconfig), so adding the first plugin loaded nothing; a
# restart loads it on every release.
# MetricsType is not here: it is rendered only for Slurm >= 25.11, whose `scontrol reconfigure` starts a new
# slurmctld that loads its plugins afresh (RECONFIGURE_RESTARTS_FROM below) on the unchanged SlurmctldPort,
# where the metrics are served (https://slurm.schedmd.com/metrics.html).
RESTART_KEYS: Final = frozenset({
    "AuthType", "AuthInfo", "ClusterName", "SlurmctldHost", "SlurmctldPort", "SlurmdPort", "SlurmUser",
    "SlurmdUser", "StateSaveLocation", "SlurmdSpoolDir", "SelectType", "SelectTypeParameters", "GresTypes",
    "ProctrackType", "TaskPlugin", "TopologyPlugin", "SwitchType", "AccountingStorageType",
    "JobAcctGatherType", "TreeWidth", "CommunicationParameters", "MpiDefault", "JobSubmitPlugins",
})  # fmt: skip
# From 23.11 `scontrol reconfigure` restarts slurmctld in place, so nodes can be added or removed
# without a restart: https://slurm.schedmd.com/archive/slurm-23.11.0/faq.html#add_nodes
RECONFIGURE_RESTARTS_FROM: Final = (23, 11)
# A registered node's declared hardware: before 23.11 `scontrol reconfigure` keeps the old values (seen on
# the test rack, Slurm 22.05.8: Gres=gpu:h100:8 kept after a change to 4, the node then INVALID_REG).
NODE_HARDWARE_KEYS: Final = frozenset({
    "Gres", "CPUs", "Boards", "SocketsPerBoard", "Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory",
})  # fmt: skip
_NODE_LINE = re.compile(r"^NodeName=(\S+)")


def _changed_lines(change: Change) -> list[str]:
    old = set((change.old or "").splitlines())
    new = set((change.new or "").splitlines())
    return sorted(old ^ new)


def _named(hostlist: str) -> list[str]:
    """The nodes a NodeName hostlist names; one we cannot read (a hand edit on a node) names itself.

    The old text comes from the node, so it may hold what Slurm tolerates and expand() refuses. Such a
    line names no rendered host, so the node's lines differ from the rendered ones: restart, not skip.
    """
    try:
        return expand(hostlist)
    except ValueError:
        return [hostlist]


def node_names(text: str | None) -> set[str]:
    """Every node a slurm.conf or gres.conf declares on its NodeName lines."""
    names: set[str] = set()
    for line in (text or "").splitlines():
        match = _NODE_LINE.match(line)
        if match and match.group(1) != "DEFAULT":
            names.update(_named(match.group(1)))
    return names


def node_hardware(text: str | None) -> dict[str, dict[str, str]]:
    """{node: its declared hardware (NODE_HARDWARE_KEYS)} from a slurm.conf's NodeName lines."""
    found: dict[str, dict[str, str]] = {}
    for line in (text or "").splitlines():
        match = _NODE_LINE.match(line)
        if not match or match.group(1) == "DEFAULT":
            continue
        words = dict(word.split("=", 1) for word in line.split()[1:] if "=" in word)
        declared = {key: value for key, value in words.items() if key in NODE_HARDWARE_KEYS}
        for name in _named(match.group(1)):
            found[name] = declared
    return found


def _hardware_changed(change: Change) -> list[str]:
    """Nodes in both versions whose declared hardware differs."""
    old, new = node_hardware(change.old), node_hardware(change.new)
    return sorted(name for name in old.keys() & new.keys() if old[name] != new[name])


def slurm_conf_restart_reasons(change: Change) -> list[str]:
    """Why a slurm.conf change needs slurmctld restarted for this Slurm version (empty: it does not)."""
    reasons: list[str] = []
    before_23_11 = not _reconfigure_restarts(change.slurm_version)
    if node_names(change.old) != node_names(change.new) and before_23_11:
        reasons.append(f"nodes added or removed (Slurm {change.slurm_version} < 23.11)")
    changed = _hardware_changed(change) if before_23_11 else []
    if changed:
        hosts = compress(changed)
        reasons.append(f"declared hardware of {hosts} changed (Slurm {change.slurm_version} < 23.11)")
    keys = sorted({line.split("=", 1)[0] for line in _changed_lines(change) if "=" in line} & RESTART_KEYS)
    if keys:
        reasons.append("changed " + ", ".join(keys))
    return reasons


def _reconfigure_restarts(version: str) -> bool:
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    return parts >= RECONFIGURE_RESTARTS_FROM


def _slurm_conf(change: Change) -> frozenset[Action]:
    # After a restart, `scontrol reconfigure` makes every running slurmd re-read the node list; no
    # slurmd restarts, so nodes whose own lines did not change keep running their jobs undisturbed.
    if slurm_conf_restart_reasons(change):
        return frozenset({Action.SLURMCTLD_RESTART, Action.RECONFIGURE})
    return frozenset({Action.RECONFIGURE})


def own_lines(text: str | None, host: str) -> list[str]:
    """The lines of a gres.conf that apply to host: its NodeName lines, named for it, and global settings.

    A NodeName line names host wherever it stands in the hostlist (`gpu-c[01,03]` names gpu-c03), and
    reads `NodeName=<host> …`, so regrouping the hostlist (a node retired beside it) changes nothing.
    """
    lines = []
    for line in (text or "").splitlines():
        match = _NODE_LINE.match(line)
        if match and host in _named(match.group(1)):
            lines.append(line.replace(match.group(1), host, 1))
        elif not match and line and not line.startswith("#"):
            lines.append(line)
    return lines


def _gres_conf(change: Change) -> frozenset[Action]:
    # slurmd reads gres.conf only when it starts; another node's lines do not concern this one.
    if own_lines(change.old, change.host) == own_lines(change.new, change.host):
        return frozenset({Action.NONE})
    return frozenset({Action.SLURMD_DRAIN_RESTART})


def _slurmd_restart(_: Change) -> frozenset[Action]:
    # cgroup.conf is read by slurmd when it starts (and by each slurmstepd it forks).
    return frozenset({Action.SLURMD_DRAIN_RESTART})


def _reconfigure(_: Change) -> frozenset[Action]:
    return frozenset({Action.RECONFIGURE})


def _nothing(_: Change) -> frozenset[Action]:
    return frozenset({Action.NONE})


SLURM_ETC: Final = "/etc/slurm/"
NODE_FILES: Final[tuple[NodeFile, ...]] = (
    NodeFile(
        "slurm/slurm.conf", SLURM_ETC + "slurm.conf", "shared", "slurm_common", _slurm_conf, configless=True
    ),
    NodeFile(
        "slurm/cgroup.conf",
        SLURM_ETC + "cgroup.conf",
        "shared",
        "slurm_common",
        _slurmd_restart,
        configless=True,
    ),
    NodeFile(
        "slurm/topology.conf",
        SLURM_ETC + "topology.conf",
        "shared",
        "slurm_common",
        _reconfigure,
        configless=True,
    ),
    # Run for every task, so a new version takes effect with the next task.
    NodeFile("slurm/task_prolog", "/etc/slurm/task_prolog", "shared", "slurm_common", _nothing, mode="0755"),
    # slurmd runs them as root at each job's allocation and end, so a new version applies to the next job.
    NodeFile("slurm/prolog", "/etc/slurm/prolog", "shared", "slurm_common", _nothing, mode="0755"),
    NodeFile("slurm/epilog", "/etc/slurm/epilog", "shared", "slurm_common", _nothing, mode="0755"),
    # The controller writes it too: slurmctld reads it, and serves it to configless cloud nodes.
    NodeFile(
        "slurm/gres.conf",
        SLURM_ETC + "gres.conf",
        "shared",
        "slurm_node",
        _gres_conf,
        also=("slurm_controller",),
        configless=True,
    ),
    NodeFile("net/hosts", "/etc/hosts", "onprem", "slurm_common", _nothing, managed_block=True),
    NodeFile("nccl/nccl.conf", "/etc/nccl.conf", "group", "gpu_nccl", _nothing),
    NodeFile("nccl/fabric.env", "/etc/gpucluster/fabric.env", "group", "gpu_nccl", _nothing),
    # The node health program reads its group's checks at every pass (docs/health.md).
    NodeFile("health/health.json", "/etc/gpucluster/health.json", "group", "slurm_node", _nothing),
    NodeFile("cloud-init/user-data", "(EC2 user data)", "cloud", "", _nothing),
    # The power programs read it at every call (clusters with cloud capacity only).
    NodeFile(
        "power/power.json",
        "/etc/gpucluster/power.json",
        "controller",
        "slurm_controller",
        _nothing,
        group="slurm",
        mode="0640",
    ),
    # Hybrid routing (clusters with a routing section only). slurmctld reloads job_submit.lua when its
    # modification time changes, so a new version applies to the next submission without a reconfigure.
    NodeFile(
        "routing/job_submit.lua",
        SLURM_ETC + "job_submit.lua",
        "controller",
        "slurm_controller",
        _nothing,
        comment="--",
    ),
    # The burst controller reads it at every pass.
    NodeFile(
        "routing/routing.json",
        "/etc/gpucluster/routing.json",
        "controller",
        "slurm_controller",
        _nothing,
        group="slurm",
        mode="0640",
    ),
    # systemd reads units at daemon-reload; the timer starts a new pass of the service, so a changed
    # unit applies to the next pass once the role has reloaded systemd.
    NodeFile(
        "routing/gpucluster-routing.service",
        "/etc/systemd/system/gpucluster-routing.service",
        "controller",
        "slurm_controller",
        _nothing,
    ),
    NodeFile(
        "routing/gpucluster-routing.timer",
        "/etc/systemd/system/gpucluster-routing.timer",
        "controller",
        "slurm_controller",
        _nothing,
    ),
    # Monitoring (every cluster): Prometheus on the controller, installed by the monitoring_prometheus role,
    # whose handler reloads it (SIGHUP, `systemctl reload prometheus`) for the configuration and the rules
    # and restarts it for /etc/default/prometheus. No Slurm daemon is touched: NONE for the review.
    NodeFile(
        "monitoring/prometheus.yml",
        "/etc/prometheus/prometheus.yml",
        "controller",
        "monitoring_prometheus",
        _nothing,
    ),
    NodeFile(
        "monitoring/gpucluster-alerts.rules.yml",
        PROMETHEUS_RULES,
        "controller",
        "monitoring_prometheus",
        _nothing,
    ),
    NodeFile(
        "monitoring/prometheus.default",
        "/etc/default/prometheus",
        "controller",
        "monitoring_prometheus",
        _nothing,
    ),
)
BY_PATH: Final = {f.path: f for f in NODE_FILES}


def files_of(scope: Scope) -> tuple[NodeFile, ...]:
    """The table's files of one scope, in table order."""
    return tuple(f for f in NODE_FILES if f.scope == scope)


def needs(path: str, change: Change) -> frozenset[Action]:
    """What one file's change needs on change.host; a file the node did not have needs nothing more."""
    if change.old == change.new:
        return frozenset()
    if change.old is None:
        return frozenset({Action.NONE})
    return BY_PATH[path].needs(change)


def actions_of(changes: Iterable[tuple[str, Change]]) -> list[str]:
    """The actions several file changes on one host need, without NONE, cheapest first."""
    found: set[Action] = set()
    for path, change in changes:
        found |= needs(path, change)
    return [a.value for a in Action if a in found and a is not Action.NONE]


def node_file_destinations() -> list[str]:
    """Every file of the table a node holds whole (no managed block): cluster state no image may keep."""
    return [f.destination for f in NODE_FILES if not f.managed_block and f.destination.startswith("/")]


def role_records(role: str, rendered: dict[str, str]) -> list[dict[str, object]]:
    """The files a role writes on a host, as the render lookup hands them to the role's tasks."""
    return [
        {
            "path": f.path,
            "dest": f.destination,
            "owner": f.owner,
            "group": f.group,
            "mode": f.mode,
            "block": f.managed_block,
            "content": rendered[f.path],
        }
        for f in NODE_FILES
        if role in (f.role, *f.also) and f.path in rendered
    ]
