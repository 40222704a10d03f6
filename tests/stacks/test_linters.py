"""cfn-lint and checkov on the synthesized templates, a full synth with CloudFormation validation on,
and an offline, credential-free `npx cdk synth` (all slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gpucluster.clusterfile import load
from stacks.checkov_skips import SKIPS, skip_check_argument
from tests.stacks.conftest import CLUSTER_FILES, ROOT, Synth, synthesize

pytestmark = pytest.mark.slow

CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
# cfn-lint warnings we accept, each with its reason. Errors are never accepted.
EXPLAINED_WARNINGS = {
    "W3010": (
        "The availability zone comes from the cluster file on purpose: EFA and cluster placement groups "
        "need one AZ, and capacity blocks and reservations are bound to one."
    ),
    "W3005": (
        "CDK's generated custom-resource provider (restrict default SG) lists its role in DependsOn and "
        "also references it with GetAtt; redundant but harmless, and not our code."
    ),
}
AWS_CLUSTERS = [p for p in CLUSTER_FILES if load(p).cluster.aws is not None]


def _templates(synth: Synth) -> list[str]:
    return sorted(str(p) for p in synth.outdir.glob("*.template.json"))


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=[p.stem for p in CLUSTER_FILES])
def test_cfn_lint_has_no_errors_and_only_explained_warnings(
    path: Path, synth_file: Callable[[str], Synth]
) -> None:
    synth = synth_file(path.stem)
    region = synth.cluster.aws.region if synth.cluster.aws else "us-east-1"
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), "--format", "json", "--regions", region, "--", *_templates(synth)],
        capture_output=True,
        text=True,
        check=False,
    )
    # Exit status is a bit mask of error (2), warning (4) and informational (8) matches; 1 is a crash.
    assert result.returncode & 1 == 0, result.stderr[-2000:]
    matches = json.loads(result.stdout)
    assert isinstance(matches, list)
    errors = [m for m in matches if m["Level"] == "Error"]
    unexplained = [m for m in matches if m["Level"] != "Error" and m["Rule"]["Id"] not in EXPLAINED_WARNINGS]
    assert not errors, [(m["Rule"]["Id"], m["Message"][:200], m["Filename"]) for m in errors]
    assert not unexplained, [(m["Rule"]["Id"], m["Message"][:200]) for m in unexplained]


def _checkov() -> Path:
    if not CHECKOV.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHECKOV} missing: run `make install` (checkov lives in its own venv)")
        pytest.skip(
            f"{CHECKOV} missing: python3 -m venv .venv-checkov && .venv-checkov/bin/pip install checkov"
        )
    return CHECKOV


@pytest.mark.parametrize("path", AWS_CLUSTERS, ids=[p.stem for p in AWS_CLUSTERS])
def test_checkov_has_no_unexplained_failures(path: Path, synth_file: Callable[[str], Synth]) -> None:
    checkov = _checkov()
    synth = synth_file(path.stem)
    result = subprocess.run(
        [
            str(checkov),
            "--skip-download",
            "--compact",
            "--framework",
            "cloudformation",
            "--output",
            "json",
            "--skip-check",
            skip_check_argument(),
            "--directory",
            str(synth.outdir),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
    )
    reports = json.loads(result.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    failed = [f for r in reports for f in r["results"]["failed_checks"]]
    assert not failed, [(f["check_id"], f["resource"], f["check_name"]) for f in failed]
    for skipped in (s for r in reports for s in r["results"]["skipped_checks"]):
        assert skipped["check_result"].get("suppress_comment"), (
            f"{skipped['check_id']} skipped on {skipped['resource']} without a reason"
        )
    assert sum(r["summary"]["passed"] for r in reports) > 0


def test_checkov_global_skips_only_cover_cdks_own_lambda(synth_file: Callable[[str], Synth]) -> None:
    assert all(reason for reason in SKIPS.values())
    for path in AWS_CLUSTERS:
        for template in synth_file(path.stem).templates.values():
            lambdas = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"]
            assert all(k.startswith("CustomVpcRestrictDefaultSGCustomResourceProvider") for k in lambdas), (
                lambdas
            )


def test_full_synth_with_cloudformation_validation(tmp_path: Path) -> None:
    cluster = load(ROOT / "clusters" / "example.yaml").cluster
    synth = synthesize(cluster, tmp_path, source="clusters/example.yaml", validate=True)
    assert set(synth.templates) == {"Network", "Checkpoints", "Alerts", "Image", "Capacity"}


def _pinned_node_version() -> str:
    """The Node LTS package.json pins for this platform (node-<os>-<arch>), e.g. '22.23.3'."""
    optional: dict[str, str] = json.loads((ROOT / "package.json").read_text())["optionalDependencies"]
    versions = {v for k, v in optional.items() if k.startswith("node-")}
    assert len(versions) == 1, optional
    return versions.pop()


def test_cdk_cli_synth_offline_without_credentials(tmp_path: Path) -> None:
    """The README's command, as written: offline, no credentials, on the pinned Node, no EOL banner."""
    npx = shutil.which("npx")
    if npx is None or not (ROOT / "node_modules" / ".bin" / "cdk").exists():
        if os.environ.get("CI"):
            pytest.fail("the pinned CDK CLI is not installed (make install)")
        pytest.skip("the pinned CDK CLI is not installed (make install)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JSII_"))}
    env.update(
        HOME=str(tmp_path),  # no ~/.aws either
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        CDK_DISABLE_CLI_TELEMETRY="true",
    )
    node = subprocess.run(
        [npx, "node", "--version"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert node.stdout.strip() == f"v{_pinned_node_version()}", "npx does not run the pinned Node LTS"
    command = [npx, "cdk", "synth", "-c", "cluster=clusters/example.yaml", "-o", str(tmp_path / "out")]
    isolated = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False).returncode == 0
    if isolated:
        command = ["unshare", "-rn", *command]  # no network at all: proves no look-up happens
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "out" / "Capacity.template.json").exists()
    # jsii prints this banner when the app's Node is past its end of life (Node 20 since April 2026).
    assert "end-of-life" not in result.stderr and "b'!!" not in result.stderr, result.stderr[:2000]
