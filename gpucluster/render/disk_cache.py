"""A disk cache of one host's rendered node files, shared by Ansible's forked workers.

Each lookup of `gpucluster.cluster.render` in a task runs in a fresh worker process, so an in-process cache
alone is lost between tasks; loading the spec and rendering costs about half a second of CPU each time.
ansible-playbook's own lookups (a `when` judged in its process) also keep their answers in that process
(rendered_in_process), which workers forked later inherit. The cache
key covers the cluster file's bytes, every source file of the renderer and the host, so any change
renders again; only this module and the standard library are imported on a hit.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
# The renderer's inputs besides the cluster file: the package's code and its templates.
SOURCES = (PACKAGE, PACKAGE / "render" / "templates")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/gpucluster/render (default ~/.cache/gpucluster/render)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpucluster" / "render"


def key(cluster_file: Path, host: str) -> str:
    """sha256 of the cluster file's bytes, the renderer's source files (path, size, mtime) and host."""
    digest = hashlib.sha256(cluster_file.read_bytes())
    for root in SOURCES:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                info = path.stat()
                digest.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    digest.update(host.encode())
    return digest.hexdigest()


def rendered(cluster_file: Path, host: str, render: Callable[[], dict[str, str]]) -> dict[str, str]:
    """The host's files from the cache, else from render() (then stored atomically for the next task)."""
    path = cache_dir() / f"{key(cluster_file, host)}.json"
    try:
        files: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
        return files
    except (OSError, ValueError):
        pass
    files = render()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as out:
            json.dump(files, out)
        os.replace(out.name, path)
        _prune(path.parent, keep=256)
    except OSError:
        pass  # an unwritable cache only costs the next task a render
    return files


# This process's answers by (cluster file, its bytes' digest, host). ansible-playbook resolves the same host's
# files for every host-task that names them, and key() walks the renderer's whole source tree each time; the
# renderer code in one process does not change while it runs, and workers forked later inherit the entries.
_answers: dict[tuple[str, str, str], dict[str, str]] = {}


def rendered_in_process(
    cluster_file: Path, host: str, render: Callable[[], dict[str, str]]
) -> dict[str, str]:
    """rendered(), remembered in this process until the cluster file's bytes change."""
    answer_key = (str(cluster_file), hashlib.sha256(cluster_file.read_bytes()).hexdigest(), host)
    files = _answers.get(answer_key)
    if files is None:
        files = _answers[answer_key] = rendered(cluster_file, host, render)
    return files


def _prune(directory: Path, *, keep: int) -> None:
    """Keep the newest `keep` entries: old cluster file versions are never read again."""
    entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-keep]:
        old.unlink(missing_ok=True)
