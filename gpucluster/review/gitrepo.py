"""Git side of a review: the repository root, changed cluster files, base and head trees."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpucluster.review.errors import ReviewError

CLUSTER_GLOB = "clusters/*.yaml"
# Inputs of synth and render besides the cluster file: a change here can change every cluster.
# The node image bundles the Ansible collection, so ansible/ is a synth input too.
CODE_PATHS = (
    "app.py",
    "cdk.json",
    "stacks",
    "gpucluster",
    "templates",
    "package-lock.json",
    "ansible",
    "ansible.cfg",
)
# The review's own code changes neither the templates nor the node files.
NOT_INPUTS = ("gpucluster/review",)


def git(repo: Path, *args: str) -> str:
    """Run git in repo and return stdout; a failure becomes a ReviewError with git's message."""
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ReviewError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result.stdout


def repo_root(start: Path) -> Path:
    """The top of the git work tree that holds start."""
    return Path(git(start, "rev-parse", "--show-toplevel").strip())


def resolve(repo: Path, rev: str) -> str:
    """The commit id a revision names; a bad revision is bad input."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except ReviewError:
        raise ReviewError(f"--base/--head {rev!r}: not a commit in {repo}; fetch it first") from None


def changed_paths(repo: Path, base: str, head: str | None, paths: tuple[str, ...]) -> list[str]:
    """Paths under `paths` that differ between base and head (None: the work tree, untracked too)."""
    spec = ["--", *paths]
    out = git(repo, "diff", "--name-only", base, *([head] if head else []), *spec).split()
    if head is None:
        out += git(repo, "ls-files", "--others", "--exclude-standard", *spec).split()
    return sorted(set(out))


def clusters_to_review(repo: Path, base: str, head: str | None, only: str | None) -> list[str]:
    """Cluster files to review: --cluster, else those that differ, else all when code differs."""
    if only is not None:
        return [only]
    changed = changed_paths(repo, base, head, (CLUSTER_GLOB,))
    if changed_paths(repo, base, head, (*CODE_PATHS, *(f":(exclude){p}" for p in NOT_INPUTS))):
        changed += [str(p.relative_to(repo)) for p in sorted(repo.glob(CLUSTER_GLOB))]
    return sorted(set(changed))


@contextmanager
def tree_at(repo: Path, rev: str | None) -> Iterator[Path]:
    """A directory holding the tree of rev (a temporary export), or the work tree for None."""
    if rev is None:
        yield repo
        return
    # An export, not a git worktree: concurrent reviews of one repository race on .git/worktrees
    # (git removes that directory when the last worktree goes, under another add).
    tree = Path(tempfile.mkdtemp(prefix="gpucluster-review-"))
    try:
        command = ["git", "-C", str(repo), "archive", "--format=tar", rev]
        archive = subprocess.run(command, capture_output=True, check=False)
        if archive.returncode != 0:
            message = archive.stderr.decode(errors="replace").strip() or "failed"
            raise ReviewError(f"git archive {rev}: {message}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="tar")
        yield tree
    finally:
        shutil.rmtree(tree, ignore_errors=True)
