"""Review one change: base and head trees, parallel synths and snapshots, diffs, classification."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.render import DESTINATIONS
from gpucluster.review import gitrepo
from gpucluster.review.cfn import StackDiff, diff_stacks
from gpucluster.review.classify_cloud import classify_stacks
from gpucluster.review.classify_nodes import classify_model, classify_snapshots
from gpucluster.review.errors import ReviewError
from gpucluster.review.findings import Finding, ordered
from gpucluster.review.nodes import FileChange, diff_files
from gpucluster.review.roles import classify_roles, role_changes
from gpucluster.review.snapshot import Snapshot, take
from gpucluster.review.synth import SynthResult
from gpucluster.review.synth_pair import synth_both


@dataclass(frozen=True)
class ClusterReview:
    """What the change does to one cluster file."""

    cluster_file: str
    findings: list[Finding]
    stacks: list[StackDiff]
    files: list[FileChange]
    cost_before_usd: float | None
    cost_after_usd: float | None
    synth_errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Review:
    """The whole review: revisions and one ClusterReview per cluster file that changed."""

    base: str
    head: str
    clusters: list[ClusterReview]

    def kinds(self) -> set[str]:
        """Every impact kind present."""
        return {f.kind for c in self.clusters for f in c.findings}


def review(
    repo: Path,
    base: str,
    head: str | None = None,
    *,
    cluster: str | None = None,
    cache_dir: Path | None = None,
) -> Review:
    """Review head (default: the work tree) against base for each changed cluster file."""
    root = gitrepo.repo_root(repo)
    base_id = gitrepo.resolve(root, base)
    head_id = gitrepo.resolve(root, head) if head else None
    files = gitrepo.clusters_to_review(root, base_id, head_id, cluster)
    ansible_paths = gitrepo.changed_paths(root, base_id, head_id, ("ansible",))
    cache = cache_dir or root / "build" / ".review-synth"
    cache.mkdir(parents=True, exist_ok=True)
    results: list[ClusterReview] = []
    if files:
        with gitrepo.tree_at(root, base_id) as base_tree, gitrepo.tree_at(root, head_id) as head_tree:
            trees = (base_tree, head_tree)
            sides = (f"the base ({base})", f"the head ({head or 'work tree'})")
            modules = root / "node_modules"
            results = [_one(f, trees, sides, modules, cache, ansible_paths=ansible_paths) for f in files]
    return Review(base=base, head=head or "work tree", clusters=[r for r in results if _changed(r)])


def _changed(r: ClusterReview) -> bool:
    return bool(r.findings or r.stacks or r.files or r.synth_errors or r.cost_before_usd != r.cost_after_usd)


def _one(
    cluster_file: str,
    trees: tuple[Path, Path],
    sides: tuple[str, str],
    node_modules: Path,
    cache: Path,
    *,
    ansible_paths: list[str],
) -> ClusterReview:
    base_tree, head_tree = trees
    # The loader first (a fraction of a second): a file it refuses ends the review before any synth starts.
    with ThreadPoolExecutor(max_workers=2) as pool:
        base_snap, head_snap = _both(
            [pool.submit(take, t, cluster_file, s) for t, s in zip(trees, sides, strict=True)]
        )
    base_synth, head_synth = synth_both(base_tree, head_tree, cluster_file, cache_dir=cache)
    if not (base_snap.exists or head_snap.exists):
        raise ReviewError(f"{cluster_file}: no such cluster file in the base or the head; check --cluster")
    stacks = diff_stacks(base_synth.templates, head_synth.templates, node_modules=node_modules)
    changes = diff_files(base_snap, head_snap, dict(DESTINATIONS))
    findings = classify_stacks(stacks) + classify_snapshots(base_snap, head_snap, changes)
    findings += classify_model(base_snap, head_snap)
    findings += classify_roles(role_changes(head_tree, ansible_paths, head_snap.ansible_groups))
    findings += _synth_findings(base_synth, head_synth)
    return ClusterReview(
        cluster_file=cluster_file,
        findings=ordered(findings),
        stacks=stacks,
        files=changes,
        cost_before_usd=_cost(base_snap),
        cost_after_usd=_cost(head_snap),
        synth_errors=[e for e in (head_synth.error,) if e],
    )


def _both(snaps: list[Future[Snapshot]]) -> tuple[Snapshot, Snapshot]:
    """Base and head snapshots; a cluster file refused on either side, or both, is one ReviewError."""
    failures = [f.exception() for f in snaps]
    refused = [e for e in failures if isinstance(e, ReviewError)]
    if refused:
        raise ReviewError("\n".join(str(e) for e in refused))
    return snaps[0].result(), snaps[1].result()


def _cost(snap: Snapshot) -> float | None:
    return snap.monthly_usd if snap.exists else 0.0


def _synth_findings(base: SynthResult, head: SynthResult) -> list[Finding]:
    """New cdk-nag/validation findings of the head; a failed head synth without them is reported too."""
    new = [f for f in head.findings if f not in set(base.findings)]
    if new:
        return [Finding("security", f"{len(new)} new cdk-nag/validation finding(s): head synth fails", new)]
    if head.error:
        return [
            Finding("security", "head synth failed; the cloud diff is incomplete", head.error.splitlines())
        ]
    return []
