"""Which cluster files a review covers, in a small throw-away repository."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpucluster.review.gitrepo import clusters_to_review, resolve, tree_at
from tests.review.conftest import git


def small_repo(root: Path) -> Path:
    """Two cluster files, a template and the review's own code, committed as `base`."""
    for name in ("clusters/a.yaml", "clusters/b.yaml", "templates/t.j2", "gpucluster/review/r.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("v1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_changed_cluster_only_then_code_means_all(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    base = resolve(repo, "HEAD")
    assert clusters_to_review(repo, base, None, None) == []
    (repo / "gpucluster/review/r.py").write_text("v2\n")  # the review's code: no cluster affected
    assert clusters_to_review(repo, base, None, None) == []
    (repo / "clusters/b.yaml").write_text("v2\n")
    assert clusters_to_review(repo, base, None, None) == ["clusters/b.yaml"]
    (repo / "templates/t.j2").write_text("v2\n")
    assert clusters_to_review(repo, base, None, None) == ["clusters/a.yaml", "clusters/b.yaml"]
    assert clusters_to_review(repo, base, None, "clusters/a.yaml") == ["clusters/a.yaml"]


def test_base_tree_is_a_temporary_export(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    (repo / "clusters/a.yaml").write_text("v2\n")
    with tree_at(repo, "HEAD") as tree:
        assert (tree / "clusters/a.yaml").read_text() == "v1\n"
    assert not tree.exists()
    assert git(repo, "worktree", "list").count("\n") == 1


def test_trees_of_one_repository_can_be_taken_concurrently(tmp_path: Path) -> None:
    # CI once failed here: concurrent git worktrees raced on .git/worktrees.
    repo = small_repo(tmp_path)

    def take(_: int) -> str:
        with tree_at(repo, "HEAD") as tree:
            return (tree / "clusters/a.yaml").read_text()

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(take, range(64))) == {"v1\n"}
