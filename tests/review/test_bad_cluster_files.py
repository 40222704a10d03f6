"""`gpucluster review` on a change that breaks the cluster file, in the head, the base or both.

The review prints the loader's own located lines (one per problem) under a line naming the side, and
exits 2 without a traceback, also for a hostile file. A base whose old code raised another error class
(SpecError) is covered by the same path: the child reads `findings` off whatever the loader raised.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster import exit_codes
from tests.cli.test_front_doors import assert_located
from tests.clusterfile.test_malformed_corpus import CORPUS
from tests.review.conftest import EXAMPLE, copy_project, git

BROKEN = {p.stem: p for p in CORPUS if p.stem in {"yaml-syntax", "min-above-max", "billion-laughs"}}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose commit `base` has the example and `broken-base` a malformed file."""
    target = tmp_path_factory.mktemp("bad-review") / "repo"
    target.mkdir()
    copy_project(target)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "base")
    git(target, "tag", "base")
    (target / EXAMPLE).write_text(BROKEN["min-above-max"].read_text())
    git(target, "commit", "-q", "-am", "broken base")
    git(target, "tag", "broken-base")
    git(target, "checkout", "-q", "base", "--", EXAMPLE)
    return target


def _review(repo: Path, head_text: str, base: str) -> subprocess.CompletedProcess[str]:
    (repo / EXAMPLE).write_text(head_text)
    return subprocess.run(
        [sys.executable, "-m", "gpucluster", "review", "--base", base, "--cluster", EXAMPLE],
        cwd=repo, capture_output=True, text=True, check=False, timeout=300, env=dict(os.environ),
    )  # fmt: skip


def _findings(stderr: str) -> str:
    """The located lines: the output without the `gpucluster review: … not a usable cluster file:` heads."""
    return "\n".join(line for line in stderr.splitlines() if "not a usable cluster file" not in line)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_head_is_reported_with_the_loaders_lines(repo: Path, name: str) -> None:
    result = _review(repo, BROKEN[name].read_text(), "base")
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"gpucluster review: {EXAMPLE} in the head (work tree): not a usable cluster file:\n"
    ), result.stderr
    assert_located(_findings(result.stderr), EXAMPLE, BROKEN[name])


def test_a_broken_base_and_a_broken_head_are_both_reported(repo: Path) -> None:
    result = _review(repo, BROKEN["yaml-syntax"].read_text(), "broken-base")
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert f"{EXAMPLE} in the base (broken-base): not a usable cluster file:" in result.stderr
    assert f"{EXAMPLE} in the head (work tree): not a usable cluster file:" in result.stderr
    assert "Traceback" not in result.stderr
    assert f"{EXAMPLE}:37: aws.capacity[0].max_count: must be ≥ min_count (4)" in result.stderr
    assert f"{EXAMPLE}:7: (document): not valid YAML" in result.stderr


def test_a_broken_base_fixed_in_the_head_is_still_bad_input(repo: Path) -> None:
    """Nothing to diff against: the base's problems are shown, the head's fix is not reviewed."""
    result = _review(repo, _example(repo), "broken-base")
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert result.stderr.startswith(
        f"gpucluster review: {EXAMPLE} in the base (broken-base): not a usable cluster file:\n"
    ), result.stderr
    assert_located(_findings(result.stderr), EXAMPLE, BROKEN["min-above-max"])


def _example(repo: Path) -> str:
    return git(repo, "show", f"base:{EXAMPLE}")
