"""A temporary git repository built from the example, with one branch per reviewed change."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from gpucluster.review import Review, review

ROOT = Path(__file__).resolve().parents[2]
COPY = (
    "clusters/example.yaml", "app.py", "cdk.json", "stacks", "gpucluster", "templates", "package.json",
    "ansible", "ansible.cfg",
)  # fmt: skip
LINK = ("node_modules",)
EXAMPLE = "clusters/example.yaml"
SPOT_GROUP = """      max_count: 8
    - name: p5-spot-b
      instance_type: p5.48xlarge
      market: spot
      min_count: 0
      max_count: 4
"""
# Each change is a (old, new) text replacement in the example; all are one-field edits a PR would make.
CHANGES: dict[str, list[tuple[str, str]]] = {
    "retention": [("noncurrent_version_days: 30", "noncurrent_version_days: 7\n    retention_days: 90")],
    "spot": [("      max_count: 8\n", SPOT_GROUP)],
    "partition": [('max_time: "2-00:00:00"', 'max_time: "1-00:00:00"')],
    "driver": [('nvidia_driver_branch: "580"', 'nvidia_driver_branch: "590"'),
               ('nvidia_driver: "580.126.09"', 'nvidia_driver: "590.48.01"')],
}  # fmt: skip
# Changes to the collection rather than the cluster file: (path, old, new).
FILE_CHANGES: dict[str, tuple[str, str, str]] = {
    "role": ("ansible/roles/slurm_node/tasks/main.yml", "---\n", "---\n# a reviewed change\n"),
}


def git(repo: Path, *args: str) -> str:
    """Run git in the test repository."""
    env_args = ["-c", "user.name=review test", "-c", "user.email=review@test", "-c", "commit.gpgsign=false"]
    return subprocess.run(
        ["git", "-C", str(repo), *env_args, *args], check=True, capture_output=True, text=True
    ).stdout


def link_outside_git(target: Path) -> None:
    """Link node_modules into a test repository and keep build outputs out of its commits."""
    for name in LINK:
        if not (target / name).is_symlink():
            (target / name).symlink_to(ROOT / name)
    (target / ".gitignore").write_text("node_modules\n__pycache__/\n*.pyc\nbuild/\ncdk.out/\n")


def copy_project(target: Path) -> None:
    """Put this checkout's copy of the files synth and render need into target, replacing any there."""
    for name in COPY:
        src, dst = ROOT / name, target / name
        if dst.is_dir():
            shutil.rmtree(dst)
        dst.unlink(missing_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    link_outside_git(target)


def build_repo(target: Path) -> Path:
    """Copy the project files synth and render need, commit them as `base`, one branch per change."""
    target.mkdir(parents=True)
    copy_project(target)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "base")
    git(target, "tag", "base")
    text = (target / EXAMPLE).read_text()
    for branch, edits in CHANGES.items():
        changed = text
        for old, new in edits:
            assert old in changed, f"{branch}: {old!r} not in the example any more"
            changed = changed.replace(old, new, 1)
        git(target, "checkout", "-q", "-b", branch, "base")
        (target / EXAMPLE).write_text(changed)
        git(target, "commit", "-q", "-am", branch)
    for branch, (path, old, new) in FILE_CHANGES.items():
        git(target, "checkout", "-q", "-b", branch, "base")
        original = (target / path).read_text()
        assert original.startswith(old), f"{branch}: {path} does not start with {old!r} any more"
        (target / path).write_text(original.replace(old, new, 1))
        git(target, "commit", "-q", "-am", branch)
    git(target, "checkout", "-q", "main")
    return target


@pytest.fixture(scope="session")
def review_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary repository; the work tree is the base commit."""
    return build_repo(tmp_path_factory.mktemp("review") / "repo")


@pytest.fixture(scope="session")
def reviewed(review_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Review]:
    """review(branch) → the review of that branch against `base`, each synth done once per session."""
    cache_dir = tmp_path_factory.mktemp("synth-cache")

    @cache
    def run(branch: str) -> Review:
        return review(review_repo, "base", branch, cache_dir=cache_dir)

    # The base synth first (shared by all), then the heads two at a time (two cores here).
    run("partition")
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(run, ["retention", "spot", "driver", "role"]))
    return run
