"""Node-file diff: which rendered files change, how, and which hosts receive them."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from gpucluster.review.snapshot import Snapshot

SHARED = "shared"


@dataclass(frozen=True)
class FileChange:
    """One node file that changes, with the unified diff and every host that receives it."""

    path: str  # e.g. slurm/slurm.conf
    destination: str  # where it lands on the node
    groups: list[str]  # node groups (or "service hosts") that receive this text
    hosts: list[str]
    diff: str
    status: str = "changed"  # changed | added (new hosts get it) | removed (hosts leave)
    old: str | None = None  # the base's text (None: absent)
    new: str | None = None  # the head's text (None: absent)


def service_hosts(model: dict[str, object]) -> list[str]:
    """Hosts that get the shared files: the Slurm controller and the on-prem service hosts."""
    names: list[str] = []
    slurm = model.get("slurm")
    if isinstance(slurm, dict) and slurm.get("controller"):
        names.append(str(slurm["controller"]))
    onprem = model.get("onprem")
    if isinstance(onprem, dict):
        names += [str(h["name"]) for h in onprem.get("service_hosts", []) if isinstance(h, dict)]
    return list(dict.fromkeys(names))


def diff_files(base: Snapshot, head: Snapshot, destinations: dict[str, str]) -> list[FileChange]:
    """Changed files, grouped so one diff text lists every group and host that receives it."""
    by_text: dict[tuple[str, str], FileChange] = {}
    for key in sorted(set(base.files) | set(head.files)):
        old, new = base.files.get(key, ""), head.files.get(key, "")
        if old == new:
            continue
        owner, path = _split(key)
        text = "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), f"base/{path}", f"head/{path}"
            )
        )
        if owner == SHARED:
            hosts = service_hosts(head.model or base.model)
            label = "service hosts"
        else:
            hosts = head.hosts.get(owner) or base.hosts.get(owner, [])
            label = owner
        status = "added" if key not in base.files else "removed" if key not in head.files else "changed"
        entry = by_text.get((path, text))
        if entry is None:
            dest = destinations.get(path, path)
            by_text[(path, text)] = FileChange(
                path, dest, [label], list(hosts), text, status, base.files.get(key), head.files.get(key)
            )
        else:
            entry.groups.append(label)
            entry.hosts.extend(h for h in hosts if h not in entry.hosts)
    return list(by_text.values())


def _split(key: str) -> tuple[str, str]:
    """`shared/slurm/slurm.conf` → (shared, slurm/slurm.conf); `aws/p5-od/x` → (p5-od, x)."""
    first, rest = key.split("/", 1)
    if first == SHARED:
        return SHARED, rest
    group, path = rest.split("/", 1)
    return group, path
