"""What one tree says about one cluster file: model, node files, hosts, monthly cost.

Runs in a child Python whose import path starts at the tree, so the base is rendered and costed
with the base's own code and templates, exactly as it would have been deployed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.review.errors import ReviewError

# Uses only the long-standing public functions so it also runs against older base commits, including
# those from before the loader moved to gpucluster.clusterfile and the renderer to gpucluster.render/.
_SCRIPT = """
import json, sys
BAD_FILE = 2
try:
    from gpucluster.clusterfile import load
    from gpucluster.render.output import render_all, manifest
except ImportError:
    from gpucluster.spec import load
    from gpucluster.render_output import render_all, manifest
from gpucluster.cost.analysis import build_report
path = sys.argv[1]
try:
    cluster = load(path).cluster
except Exception as exc:  # ClusterFileError here, SpecError in older trees: both carry located findings
    if not hasattr(exc, "findings"):
        raise
    print(exc, file=sys.stderr)
    sys.exit(BAD_FILE)
files = render_all(cluster, path)
try:
    cost = build_report(cluster, path).monthly_total_usd
except Exception as exc:  # a cluster without economics still reviews; the cost line says why
    cost = None
    print(f"cost: {exc}", file=sys.stderr)
hosts = {g: v["hosts"] for g, v in manifest(cluster, files)["groups"].items()}
try:
    from gpucluster.ansible_vars import inventory
    ansible_groups = inventory(cluster, path).groups
except ImportError:  # a base from before the inventory plugin
    ansible_groups = {}
json.dump({"model": cluster.model_dump(mode="json"), "files": files, "hosts": hosts,
           "ansible_groups": ansible_groups, "monthly_usd": cost}, sys.stdout)
"""


@dataclass(frozen=True)
class Snapshot:
    """One side of a review for one cluster file; `exists` is False when the file is absent."""

    exists: bool
    model: dict[str, object]
    files: dict[str, str]
    hosts: dict[str, list[str]]  # node group → host names
    monthly_usd: float | None
    ansible_groups: dict[str, list[str]] = field(default_factory=dict)  # inventory group → hosts


_BAD_FILE = 2  # the script's exit status for a cluster file the loader refuses
EMPTY = Snapshot(exists=False, model={}, files={}, hosts={}, monthly_usd=None)


def take(tree: Path, cluster_file: str, side: str = "the tree") -> Snapshot:
    """Load, render and cost cluster_file with the code in tree; a load error is bad input.

    A file the loader refuses is reported with the loader's own located lines (`FILE:LINE: path: …`),
    one per problem, under a line that names the side (`the base (origin/main)`).
    """
    if not (tree / cluster_file).is_file():
        return EMPTY
    result = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); " + _SCRIPT, cluster_file],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode == _BAD_FILE:
        raise ReviewError(f"{cluster_file} in {side}: not a usable cluster file:\n{result.stderr.strip()}")
    if result.returncode != 0:
        raise ReviewError(f"{cluster_file} at {tree}: cannot load or render:\n{_tail(result.stderr)}")
    data = json.loads(result.stdout)
    cost = data["monthly_usd"]
    return Snapshot(
        exists=True,
        model=data["model"],
        files=data["files"],
        hosts=data["hosts"],
        monthly_usd=float(cost) if cost is not None else None,
        ansible_groups=data.get("ansible_groups", {}),
    )


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
