"""Classify node-side changes: Slurm restarts vs reconfigure, driver reboots, checkpoint retention."""

from __future__ import annotations

from typing import Any

from gpucluster.review.findings import Finding
from gpucluster.review.nodes import FileChange
from gpucluster.review.snapshot import Snapshot

# slurm.conf keys whose change needs slurmctld (and slurmd) restarted, not `scontrol reconfigure`:
# https://slurm.schedmd.com/scontrol.html#OPT_reconfigure
RESTART_KEYS = {
    "AuthType", "ClusterName", "SlurmctldHost", "SlurmctldPort", "SlurmdPort", "SlurmUser", "SlurmdUser",
    "StateSaveLocation", "SlurmdSpoolDir", "SelectType", "SelectTypeParameters", "GresTypes",
    "ProctrackType", "TaskPlugin", "TopologyPlugin", "SwitchType", "AccountingStorageType",
    "JobAcctGatherType", "TreeWidth", "CommunicationParameters", "MpiDefault",
}  # fmt: skip
SLURMD_FILES = {"slurm/gres.conf", "slurm/cgroup.conf"}
RECONFIGURE_FILES = {"slurm/topology.conf"}


def classify_files(changes: list[FileChange]) -> list[Finding]:
    """One finding per changed node file: what must happen on the hosts that receive it."""
    return [_membership(change) if change.status != "changed" else _file(change) for change in changes]


def _membership(change: FileChange) -> Finding:
    """A file that a node group gets for the first time, or that leaves with its group."""
    where = f"`{change.destination}` on {len(change.hosts)} host(s)"
    groups = ", ".join(change.groups)
    if change.status == "added":
        return Finding("in-place", f"{where}: new node group ({groups}) receives it", hosts=change.hosts)
    return Finding("in-place", f"{where}: node group ({groups}) leaves the cluster", hosts=change.hosts)


def _file(change: FileChange) -> Finding:
    n = len(change.hosts)
    where = f"`{change.destination}` on {n} host(s)"
    if change.path == "slurm/slurm.conf":
        reasons = restart_reasons(change.diff)
        if reasons:
            why = "; ".join(reasons)
            return Finding(
                "slurmctld-restart", f"{where}: slurmctld restart needed ({why})", hosts=change.hosts
            )
        return Finding("reconfigure", f"{where}: `scontrol reconfigure` only, no restart", hosts=change.hosts)
    if change.path in SLURMD_FILES:
        return Finding(
            "slurmd-restart", f"{where}: slurmd restart on {n} nodes; drain them first", hosts=change.hosts
        )
    if change.path in RECONFIGURE_FILES:
        return Finding("reconfigure", f"{where}: `scontrol reconfigure` only, no restart", hosts=change.hosts)
    return Finding(
        "in-place", f"{where}: updated in place; new jobs or new instances pick it up", hosts=change.hosts
    )


def restart_reasons(diff: str) -> list[str]:
    """Why a slurm.conf diff needs a controller restart: nodes added/removed or restart-only keys."""
    changed = [line[1:] for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    reasons: list[str] = []
    if any(line.startswith("NodeName=") for line in changed):
        reasons.append("nodes added or removed")
    keys = sorted({line.split("=", 1)[0] for line in changed if "=" in line} & RESTART_KEYS)
    if keys:
        reasons.append("changed " + ", ".join(keys))
    return reasons


def classify_model(base: Snapshot, head: Snapshot) -> list[Finding]:
    """Findings that only the cluster files show: driver versions and checkpoint retention."""
    if not (base.exists and head.exists):
        return []
    return _driver(base, head) + _retention(base.model, head.model)


def _driver(base: Snapshot, head: Snapshot) -> list[Finding]:
    keys = ("nvidia_driver_branch", "nvidia_driver")
    old, new = _get(base.model, "versions"), _get(head.model, "versions")
    changed = [f"{k} {old.get(k)} → {new.get(k)}" for k in keys if old.get(k) != new.get(k)]
    if not changed:
        return []
    onprem = _site_hosts(head, base, "onprem")
    cloud = _site_hosts(head, base, "aws")
    detail = [
        f"on-prem: rolling reboot of {len(onprem)} GPU nodes, a drained few at a time: {', '.join(onprem)}"
    ]
    if cloud:
        detail.append(
            f"cloud: {len(cloud)} cloud nodes get the driver from the AMI (aws.ami_ssm_parameter):"
            f" publish one with {new.get('nvidia_driver')}, then relaunch them (instance refresh)"
        )
    title = f"versions: {'; '.join(changed)}: rolling reboot of {len(onprem)} GPU nodes on-prem"
    return [Finding("reboot", title, detail, hosts=onprem + cloud)]


def _site_hosts(head: Snapshot, base: Snapshot, site: str) -> list[str]:
    groups = _site_groups(head.model, site) or _site_groups(base.model, site)
    return [h for g in groups for h in head.hosts.get(g, base.hosts.get(g, []))]


def _site_groups(model: dict[str, Any], site: str) -> list[str]:
    if site == "onprem":
        return [str(r["name"]) for r in _get(model, "onprem").get("racks", [])]
    return [str(c["name"]) for c in _get(model, "aws").get("capacity", [])]


def _retention(old_model: dict[str, Any], new_model: dict[str, Any]) -> list[Finding]:
    old = _get(_get(old_model, "aws"), "checkpoint")
    new = _get(_get(new_model, "aws"), "checkpoint")
    if not old:
        return []
    if not new:
        return [Finding("data-loss", "aws.checkpoint removed: the checkpoint bucket leaves the cluster")]
    out: list[Finding] = []
    for key in ("retention_days", "noncurrent_version_days"):
        before, after = old.get(key), new.get(key)
        if after is not None and (before is None or after < before):
            was = "kept forever" if before is None else f"{before} days"
            out.append(
                Finding("data-loss", f"aws.checkpoint.{key}: {was} → {after} days: retention shortened")
            )
    return out


def _get(model: dict[str, Any], key: str) -> dict[str, Any]:
    value = model.get(key)
    return value if isinstance(value, dict) else {}
