"""Report formatting on hand-made reviews: cost line, folding, size limits, JSON, exit status."""

from __future__ import annotations

import json

from gpucluster.review.command import exit_status
from gpucluster.review.engine import ClusterReview, Review
from gpucluster.review.findings import Finding
from gpucluster.review.nodes import FileChange
from gpucluster.review.report import MARKER, MAX_COMMENT_CHARS, as_dict, as_markdown, cost_line


def one(findings: list[Finding], files: list[FileChange] | None = None) -> Review:
    """A review of one cluster file with these findings."""
    cluster = ClusterReview("clusters/x.yaml", findings, [], files or [], 100.0, 150.0)
    return Review(base="origin/main", head="work tree", clusters=[cluster])


def test_cost_line() -> None:
    assert cost_line(1000.0, 1500.0) == "**Cost:** $1,000/month → $1,500/month (+$500, +50.0%)"
    assert cost_line(1500.0, 1000.0) == "**Cost:** $1,500/month → $1,000/month (-$500, -33.3%)"
    assert cost_line(None, 1.0).startswith("**Cost:** unknown")


def test_summary_first_details_folded() -> None:
    diff = "--- base/x\n+++ head/x\n-a\n+b\n"
    md = as_markdown(
        one(
            [Finding("data-loss", "bucket replaced", ["why"])],
            [FileChange("x", "/etc/x", ["g"], ["h1"], diff)],
        )
    )
    lines = md.splitlines()
    assert lines[0] == MARKER
    assert lines.index("| Impact | Change |") < lines.index(
        "<details><summary>Details of the impacts</summary>"
    )
    assert "| 🔴 data-loss risk | bucket replaced |" in lines
    assert "<details><summary>Node file <code>/etc/x</code> → 1 host(s) (g)</summary>" in lines


def test_huge_diffs_are_cut_to_fit_a_comment() -> None:
    diff = "".join(f"+line {i} {'x' * 200}\n" for i in range(400))
    files = [FileChange(f"f{i}", f"/etc/f{i}", ["g"], ["h"], diff) for i in range(10)]
    md = as_markdown(one([Finding("in-place", "files")], files))
    assert len(md) < MAX_COMMENT_CHARS + 200
    assert "... 280 more lines" in md and "Details cut to fit a comment" in md


def test_json_and_fail_on() -> None:
    review = one([Finding("security", "SG opened"), Finding("replace", "ASG max 4 → 8")])
    data = json.loads(json.dumps(as_dict(review), default=str))
    assert data["kinds"] == ["replace", "security"] and data["no_changes"] is False
    assert exit_status(review, ["security"]) == 3
    assert exit_status(review, ["data-loss"]) == 0
    assert exit_status(review, []) == 0
