"""Base and head synthesized in one process give the templates two separate synths give."""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster.review.gitrepo import tree_at
from gpucluster.review.synth import synth
from gpucluster.review.synth_pair import synth_both
from gpucluster.review.validation import findings_in

EXAMPLE = "clusters/example.yaml"


def test_one_process_synth_matches_separate_synths(review_repo: Path, tmp_path: Path) -> None:
    with tree_at(review_repo, "base") as base, tree_at(review_repo, "spot") as head:
        pair = synth_both(base, head, EXAMPLE, cache_dir=tmp_path / "pair")
        alone = [synth(t, EXAMPLE, cache_dir=tmp_path / "alone") for t in (base, head)]
    assert [r.error for r in pair] == [None, None]
    assert [r.templates for r in pair] == [r.templates for r in alone]
    assert pair[0].templates != pair[1].templates  # the spot group is in the head only


def test_a_failing_head_is_synthesized_alone_for_its_error(review_repo: Path, tmp_path: Path) -> None:
    with tree_at(review_repo, "base") as base, tree_at(review_repo, "base") as head:
        cluster = head / EXAMPLE
        cluster.write_text(cluster.read_text().replace("name: example", "name: Not_A_Name", 1))
        base_result, head_result = synth_both(base, head, EXAMPLE, cache_dir=tmp_path / "cache")
    assert base_result.templates and base_result.error is None
    assert not head_result.templates
    assert head_result.error is not None and "name" in head_result.error


def test_findings_come_from_the_validation_report(tmp_path: Path) -> None:
    violation = {
        "ruleName": "AwsSolutions-S10",
        "description": "The S3 Bucket does not require\n  SSL.",
        "violatingConstructs": [{"constructPath": "Checkpoints/Bucket/Resource"}],
    }
    report = {"pluginReports": [{"pluginName": "AwsSolutions", "violations": [violation]}]}
    (tmp_path / "validation-report.json").write_text(json.dumps(report))
    output = "[Error at /Capacity/Nodes] GpuCluster-Imds: IMDSv2 is not required\nnoise\n"
    assert findings_in(tmp_path / "validation-report.json", output) == [
        "[Error at /Capacity/Nodes] GpuCluster-Imds: IMDSv2 is not required",
        "[Error at /Checkpoints/Bucket/Resource] AwsSolutions-S10: The S3 Bucket does not require SSL.",
    ]
    assert findings_in(tmp_path / "missing.json", "") == []
