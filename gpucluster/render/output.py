"""Write every file every node receives into a directory: temp dir first, then one rename."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.render import DESTINATIONS, render


def render_all(cluster: Cluster, source: str) -> dict[str, str]:
    """{output path: text}: shared/… once, then <target>/<group>/… for every node group."""
    out = {f"shared/{path}": text for path, text in render(cluster, "onprem", source=source).items()}
    for group in node_groups(cluster):
        files = render(cluster, group.site, group=group.name, source=source)
        out.update({f"{group.site}/{group.name}/{path}": text for path, text in files.items()})
    return out


def manifest(cluster: Cluster, files: dict[str, str]) -> dict[str, object]:
    """Which hosts receive which files, where they land, and their digests (for reviews)."""
    groups: dict[str, object] = {}
    for group in node_groups(cluster):
        prefix = f"{group.site}/{group.name}/"
        groups[group.name] = {
            "site": group.site,
            "hosts": list(group.hosts),
            "files": {
                path[len(prefix) :]: {
                    "destination": DESTINATIONS.get(path[len(prefix) :]),
                    "sha256": hashlib.sha256(text.encode()).hexdigest(),
                }
                for path, text in files.items()
                if path.startswith(prefix)
            },
        }
    return {"cluster": cluster.name, "groups": groups}


def write_tree(cluster: Cluster, out_dir: str, *, source: str) -> int:
    """Replace out_dir with the rendered tree; a failure leaves the old tree untouched."""
    files = render_all(cluster, source)
    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for path, text in files.items():
            dest = staging / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        (staging / "manifest.json").write_text(json.dumps(manifest(cluster, files), indent=2) + "\n")
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return len(files) + 1


def _swap_into_place(staging: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
    staging.rename(target)
    if old is not None:
        shutil.rmtree(old)
