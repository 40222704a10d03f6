"""Prometheus's cloud targets: one file_sd file per cloud node with a live instance, kept by the reconciler.

The controller's prometheus.yml reads `names.PROMETHEUS_CLOUD_TARGETS/*.json` (file_sd, re-read by
Prometheus itself: https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config).
A node is a target from its launch (an instance has its private address from `pending` on) until its
instance ends, so a powered-down node is no target and raises no alert. Each pass writes what EC2 and Slurm
say now and removes the rest: a missed suspend or a controller restart leaves no stale target.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpucluster.power import config, fleet

SUFFIX = ".json"


@dataclass(frozen=True)
class Target:
    """A cloud node Prometheus scrapes: its Slurm name, its instance's private address, its group."""

    node: str
    address: str
    group: str

    def file_text(self) -> str:
        """The file_sd file: the address without a port (each scrape job adds its exporter's port)."""
        labels = {"site": "cloud", "node_group": self.group, "node": self.node}
        return json.dumps([{"targets": [self.address], "labels": labels}], sort_keys=True) + "\n"


def wanted(cfg: config.PowerConfig, instances: list[fleet.Instance], terminating: set[str]) -> list[Target]:
    """One target per cloud node with a live instance that is not being terminated (the newest if several)."""
    newest: dict[str, tuple[fleet.Instance, str]] = {}
    for instance in instances:
        if not instance.live or instance.id in terminating or not instance.address or instance.node is None:
            continue
        group = cfg.group_of(instance.node)
        known = newest.get(instance.node)
        if group is not None and (known is None or instance.launched > known[0].launched):
            newest[instance.node] = (instance, group.name)
    return [Target(node, instance.address, group) for node, (instance, group) in sorted(newest.items())]


def sync(directory: Path, targets: list[Target]) -> list[str]:
    """Make the directory hold exactly these targets' files; one line per file written or removed.

    A directory that does not exist means no monitoring on this controller: nothing is written.
    """
    if not directory.is_dir():
        return []
    lines: list[str] = []
    keep = {f"{t.node}{SUFFIX}" for t in targets}
    for target in targets:
        path = directory / f"{target.node}{SUFFIX}"
        text = target.file_text()
        if path.is_file() and path.read_text() == text:
            continue
        _write_atomically(path, text)
        lines.append(f"prometheus target {target.node} at {target.address}")
    for path in sorted(directory.glob(f"*{SUFFIX}")):
        if path.name not in keep:
            path.unlink(missing_ok=True)
            lines.append(f"prometheus target {path.stem} removed")
    return lines


def _write_atomically(path: Path, text: str) -> None:
    """Prometheus may read while we write: it sees the old file or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
