"""Every front door turns each malformed cluster file into located errors, exit status 2, no traceback.

The doors: the `gpucluster` verbs, the CDK app as `cdk synth` runs it (and `npx cdk synth` itself on a
few files: it is slower), `ansible-inventory` and `ansible-playbook -i FILE`. `gpucluster review` on a
base and a head is in tests/review/test_bad_cluster_files.py. Each file's `# expect: PATH (line N)`
header names the finding every door must print, at that exact line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster import exit_codes
from gpucluster.cli import main
from tests.clusterfile.test_malformed_corpus import CORPUS, expected
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
# Ansible knows a cluster file by its markers; a file with neither (an empty one) is no cluster file to it.
CLAIMED = [p for p in CORPUS if re.search(r"^[ -]*(apiVersion|kind):", p.read_text(), re.M)]
FEW = [p for p in CORPUS if p.stem in {"yaml-syntax", "min-above-max", "billion-laughs", "top-level-typo"}]


def assert_located(output: str, shown: str, path: Path) -> None:
    """Every line a located finding of `shown` (the file as the door names it), each once, the expected
    one among them at its line."""
    want_path, want_line = expected(path)
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert f"{shown}:{want_line}: {want_path}: " in output, output
    located = re.compile(rf"^{re.escape(shown)}:[0-9]+: (warning: )?\S+: .+; .+$")
    assert all(located.match(line) for line in lines), output
    assert len(lines) == len(set(lines)), f"a problem reported twice:\n{output}"


def _run(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120, env={**os.environ, **env}
    )


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_gpucluster_validate(path: Path) -> None:
    result = _run([sys.executable, "-m", "gpucluster", "validate", str(path)])
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert result.stdout == ""
    assert_located(result.stderr, str(path), path)


@pytest.mark.parametrize("verb", ["show", "render", "cost", "accept"])
def test_every_verb_that_reads_a_cluster_file(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in CORPUS:
        argv = {
            "show": ["show", str(path)],
            "render": ["render", str(path), "--out", str(tmp_path / "out")],
            "cost": ["cost", str(path)],
            "accept": ["accept", "evaluate", "--cluster", str(path), "--host", "gpu01",
                       "--observations", str(tmp_path / "obs.json"), "--out", str(tmp_path / "acc")],
        }[verb]  # fmt: skip
        assert main(argv) == exit_codes.BAD_INPUT, path.name
        captured = capsys.readouterr()
        assert captured.out == "", path.name
        assert_located(captured.err, str(path), path)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_cdk_app_as_cdk_synth_runs_it(path: Path, tmp_path: Path) -> None:
    context = json.dumps({"cluster": str(path)})
    result = _run(
        [sys.executable, "app.py"],
        CDK_CONTEXT_JSON=context,
        CDK_OUTDIR=str(tmp_path / "out"),
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert_located(result.stderr, str(path), path)
    assert not list((tmp_path / "out").glob("*.template.json"))


@pytest.mark.parametrize("path", FEW, ids=[p.stem for p in FEW])
def test_npx_cdk_synth(path: Path, tmp_path: Path) -> None:
    """The CDK CLI prints the app's lines and reports its status 2; its own status is 1 (cdk's choice)."""
    result = _run(
        ["npx", "--no-install", "cdk", "synth", "-q", "-o", str(tmp_path / "out"), "-c", f"cluster={path}"],
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )  # fmt: skip
    assert result.returncode != 0
    assert "Subprocess exited with error 2" in result.stderr, result.stderr
    app_lines = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    assert_located("\n".join(app_lines), str(path), path)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path", CLAIMED, ids=[p.stem for p in CLAIMED])
def test_ansible_inventory(path: Path) -> None:
    result = _run([str(BIN / "ansible-inventory"), "-i", str(path), "--list"])
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert_located(result.stderr, str(path.resolve()), path)


@pytest.mark.parametrize("path", FEW, ids=[p.stem for p in FEW])
def test_ansible_playbook(path: Path) -> None:
    result = _run([str(BIN / "ansible-playbook"), "-i", str(path), "ansible/site.yml", "--syntax-check"])
    assert result.returncode == exit_codes.BAD_INPUT, result.stdout + result.stderr
    assert_located(result.stderr, str(path.resolve()), path)


def test_the_check_can_fail() -> None:
    """A traceback, an unlocated line or a problem printed twice is caught."""
    path = next(p for p in CORPUS if p.stem == "min-above-max")
    good = f"{path}:37: aws.capacity[0].max_count: must be ≥ min_count (4); raise max_count"
    assert_located(good, str(path), path)
    for bad in (good + "\nTraceback (most recent call last):", good + "\n" + good, good + "\noops"):
        with pytest.raises(AssertionError):
            assert_located(bad, str(path), path)
