"""A review whose base commit predates gpucluster.clusterfile and the gpucluster/render/ package."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

from gpucluster.review import review
from tests.review.conftest import COPY, EXAMPLE, ROOT, copy_project, git, link_outside_git

# The last commit with gpucluster/spec/ and the render*.py modules (in this repository's history).
OLD_LAYOUT = "ecf58bd"


def _old_tree(target: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", OLD_LAYOUT, *COPY], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")


def test_review_reads_a_base_with_the_old_package_layout(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _old_tree(repo)
    assert (repo / "gpucluster" / "spec" / "load.py").is_file() and (
        repo / "gpucluster" / "render.py"
    ).is_file()
    link_outside_git(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "old layout")
    copy_project(repo)  # the head: this checkout's code, in the work tree
    text = (repo / EXAMPLE).read_text()
    # Since the base, a fallback of another GPU model must be declared (mixed_gpus), which changes the
    # spot group's gres lines; keep that group's hardware as the base saw it (p5.48xlarge only).
    text = re.sub(
        r"\n(      #[^\n]*\n)*      fallback_instance_types: \[p5e\.48xlarge\]\n      mixed_gpus: true",
        "",
        text,
    )
    assert "mixed_gpus" not in text
    # The routing section came later too, and turning job_submit.lua on restarts slurmctld: leave it out.
    before_routing, routing_on = text.split("\nrouting:\n", 1)
    text = before_routing + "\n" + routing_on[routing_on.index("\neconomics:") + 1 :]
    assert "\nrouting:" not in text
    (repo / EXAMPLE).write_text(text.replace('max_time: "2-00:00:00"', 'max_time: "1-00:00:00"', 1))
    result = review(repo, "main", cache_dir=tmp_path / "cache")  # head: the work tree, new layout
    findings = [f for c in result.clusters for f in c.findings]
    assert any(
        f.kind == "reconfigure" and "`/etc/slurm/slurm.conf` on 21 host(s)" in f.title for f in findings
    ), findings
    # The node files need no restart; the roles changed since then, and say what they may restart.
    files = [f for f in findings if not f.title.startswith("Ansible ")]
    assert not any(f.kind in {"slurmctld-restart", "slurmd-restart"} for f in files), files
    assert any(f.title.startswith("Ansible role slurm_node changed") for f in findings), findings
