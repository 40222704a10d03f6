"""What acceptance does to a node in Slurm, and the skipped and kept-drain lines of its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.accept.admission import AWAITING_REASON, Admission, admission
from gpucluster.cli import main
from tests.accept.test_cli import EXAMPLE, write_obs


@pytest.mark.parametrize(
    ("passed", "state", "reason", "expected"),
    [
        (True, "drained", AWAITING_REASON, "resume"),
        (True, "drained*", "gpucluster accept: gpu_count: expected 8 x H100, found 7", "resume"),
        (True, "idle", "none", "none"),
        (True, "drained", "bad DIMM B2", "keep"),
        (True, "draining", "bad DIMM B2", "keep"),
        (False, "drained", "bad DIMM B2", "keep"),
        (False, "idle", "none", "drain"),
        (False, "drained", AWAITING_REASON, "drain"),
    ],
)
def test_only_acceptance_drains_are_lifted_and_an_operators_drain_is_kept(
    passed: bool, state: str, reason: str, expected: str
) -> None:
    assert admission(passed, "gpu_count: found 0 GPUs", state, reason).action == expected


def test_a_failing_node_is_drained_with_the_failed_check() -> None:
    assert admission(False, "gpu_count: found 0 GPUs", "idle", "none") == Admission(
        "drain", "failed: drained", "gpucluster accept: gpu_count: found 0 GPUs"
    )


def test_skipped_and_kept_drains_reach_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate = ["accept", "evaluate", "--cluster", str(EXAMPLE), "--out", str(tmp_path)]
    obs = str(write_obs(tmp_path, "healthy"))
    assert main([*evaluate, "--host", "gpu-a01", "--observations", obs, "--slurm-state", "drained",
                 "--slurm-reason", "bad DIMM B2"]) == 0  # fmt: skip
    line = json.loads(capsys.readouterr().out)
    assert (line["action"], line["passed"]) == ("keep", True)
    assert main([*evaluate, "--host", "gpu-a02", "--observations", obs, "--slurm-state", "drained",
                 "--slurm-reason", AWAITING_REASON]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["action"] == "resume"
    skip = [
        "accept",
        "skip",
        "--cluster",
        str(EXAMPLE),
        "--host",
        "gpu-a03",
        "--why",
        "runs job(s) 7; not probed",
    ]
    assert main([*skip, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["accept", "summarize", "--reports", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Acceptance: 2 of 3 nodes passed (example), 1 skipped."
    assert lines[4:] == [
        "| gpu-a01 | yes (operator's drain kept) | — |",
        "| gpu-a02 | yes | — |",
        "| gpu-a03 | skipped: runs job(s) 7; not probed | — |",
    ]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["skipped"]) == (2, 0, 1)
