"""Classify node-side changes: Slurm restarts vs reconfigure, driver reboots, checkpoint retention."""

from __future__ import annotations

from typing import Any

from gpucluster.render.node_files import Action, Change, needs, slurm_conf_restart_reasons
from gpucluster.review.findings import Finding
from gpucluster.review.nodes import FileChange
from gpucluster.review.snapshot import Snapshot


def classify_files(
    changes: list[FileChange],
    *,
    slurm_version: str,
    controller: str,
    slurmd_hosts: set[str],
    new_hosts: frozenset[str] = frozenset(),
) -> list[Finding]:
    """What must happen on the hosts that receive each changed node file (the node-file table decides).

    slurmd_hosts are the GPU nodes: only they run slurmd, so only they can need a slurmd restart.
    new_hosts join with this change: they receive their first copy, which needs nothing more.
    """
    findings: list[Finding] = []
    for change in changes:
        if change.status != "changed":
            findings += _membership(change)
        else:
            findings += _file(change, slurm_version, controller, slurmd_hosts, new_hosts)
    return findings


def classify_snapshots(base: Snapshot, head: Snapshot, changes: list[FileChange]) -> list[Finding]:
    """classify_files for a base and a head: Slurm version and controller from the head, hosts from both."""
    model = head.model if head.exists else base.model
    slurm, versions = model.get("slurm"), model.get("versions")
    base_hosts, head_hosts = _hosts(base), _hosts(head)
    return classify_files(
        changes,
        slurm_version=str(versions.get("slurm", "")) if isinstance(versions, dict) else "",
        controller=str(slurm.get("controller", "")) if isinstance(slurm, dict) else "",
        slurmd_hosts=base_hosts | head_hosts,
        new_hosts=frozenset(head_hosts - base_hosts),
    )


def _hosts(snap: Snapshot) -> set[str]:
    return {host for hosts in snap.hosts.values() for host in hosts}


def _membership(change: FileChange) -> list[Finding]:
    """A file that a node group gets for the first time, or that leaves with its group."""
    where = f"`{change.destination}` on {len(change.hosts)} host(s)"
    groups = ", ".join(change.groups)
    if change.status == "added":
        return [Finding("in-place", f"{where}: new node group ({groups}) receives it", hosts=change.hosts)]
    return [Finding("in-place", f"{where}: node group ({groups}) leaves the cluster", hosts=change.hosts)]


def _file(
    change: FileChange, slurm_version: str, controller: str, slurmd_hosts: set[str], new_hosts: frozenset[str]
) -> list[Finding]:
    where = f"`{change.destination}` on {len(change.hosts)} host(s)"
    by_action: dict[Action, list[str]] = {}
    for host in change.hosts:
        old = None if host in new_hosts else change.old
        for action in needs(change.path, Change(old, change.new, host, slurm_version)):
            by_action.setdefault(action, []).append(host)
    findings: list[Finding] = []
    if Action.SLURMCTLD_RESTART in by_action:
        why = "; ".join(slurm_conf_restart_reasons(Change(change.old, change.new, controller, slurm_version)))
        findings.append(
            Finding(
                "slurmctld-restart", f"{where}: slurmctld restart on {controller} ({why})", hosts=[controller]
            )
        )
    if Action.RECONFIGURE in by_action and Action.SLURMCTLD_RESTART not in by_action:
        findings.append(
            Finding("reconfigure", f"{where}: `scontrol reconfigure` only, no restart", hosts=change.hosts)
        )
    elif Action.RECONFIGURE in by_action:
        findings.append(
            Finding(
                "reconfigure", f"{where}: then `scontrol reconfigure`; no slurmd restarts", hosts=change.hosts
            )
        )
    drained = [h for h in by_action.get(Action.SLURMD_DRAIN_RESTART, []) if h in slurmd_hosts]
    if drained:
        findings.append(
            Finding(
                "slurmd-restart",
                f"{where}: slurmd restart on {len(drained)} node(s) whose own lines changed; drained first",
                hosts=drained,
            )
        )
    if not findings:
        findings.append(
            Finding(
                "in-place",
                f"{where}: updated in place; new jobs or new instances pick it up",
                hosts=change.hosts,
            )
        )
    return findings


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
        # Instances, not Slurm names: a group of mixed GPU models has max_count names per model.
        instances = sum(int(c.get("max_count", 0)) for c in _get(head.model, "aws").get("capacity", []))
        detail.append(
            f"cloud: up to {instances} cloud nodes get the driver from the node image (image stack, or"
            f" aws.ami_id): the pin change builds a new AMI with {new.get('nvidia_driver')};"
            " nodes take it as they power up"
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
