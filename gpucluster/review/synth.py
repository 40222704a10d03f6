"""Synthesize one tree's CloudFormation with the pinned CDK CLI, reusing an unchanged out dir."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.review.errors import ReviewError
from gpucluster.review.gitrepo import CODE_PATHS, NOT_INPUTS

Template = dict[str, object]
STAMP = ".gpucluster-review-complete"
KEEP_OUT_DIRS = 8  # a base and a head for a few cluster files; older out dirs are pruned
# cdk-nag and the app's own validations print `[Error at /Stack/Path] RuleId: message`.
_FINDING = re.compile(r"\[Error at (?P<path>[^\]]+)\] (?P<rule>[^:\s]+): (?P<message>.*)")
# Never let synth reach AWS: even dummy credentials make it try STS.
_AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


@dataclass(frozen=True)
class SynthResult:
    """Templates by stack name, or the failure and the validation findings that caused it."""

    templates: dict[str, Template] = field(default_factory=dict)
    error: str | None = None
    findings: list[str] = field(default_factory=list)
    reused: bool = False


def inputs_hash(tree: Path, cluster_file: str) -> str:
    """sha256 over the cluster file and every synth input (app, stacks, core, templates, lock)."""
    digest = hashlib.sha256()
    paths = [tree / cluster_file]
    for name in CODE_PATHS:
        root = tree / name
        paths += sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    skip = [tree / p for p in NOT_INPUTS]
    for path in paths:
        if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        if any(path.is_relative_to(d) for d in skip):
            continue
        digest.update(str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cdk_cli(node_modules: Path) -> list[str]:
    """The pinned CDK CLI as a command (what `npx cdk` runs), or bad input when not installed."""
    entry = node_modules / "aws-cdk" / "bin" / "cdk"
    if not entry.is_file():
        raise ReviewError(f"{entry}: the CDK CLI is not installed; run `make install` (npm ci) first")
    return ["node", str(entry)]


def synth_env() -> dict[str, str]:
    """The environment for an offline synth: no telemetry, no AWS credentials, this venv first."""
    env = {k: v for k, v in os.environ.items() if k not in _AWS_VARS}
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def synth(tree: Path, cluster_file: str, *, cache_dir: Path, node_modules: Path) -> SynthResult:
    """Templates of cluster_file as synthesized in tree; an out dir with the same inputs is reused."""
    if not (tree / cluster_file).is_file():
        return SynthResult()
    out = cache_dir / inputs_hash(tree, cluster_file)
    if (out / STAMP).is_file():
        os.utime(out)  # recently used: pruned last
        return SynthResult(templates=read_assembly(out), reused=True)
    staging = out.with_name(f"{out.name}.tmp-{os.getpid()}-{id(tree)}")
    shutil.rmtree(staging, ignore_errors=True)
    command = [*cdk_cli(node_modules), "synth", "-q", "--no-notices", "-c", f"cluster={cluster_file}"]
    result = subprocess.run(
        [*command, "-o", str(staging)], cwd=tree, env=synth_env(), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        text = result.stderr + result.stdout
        findings = [m.group(0) for m in _FINDING.finditer(text)]
        return SynthResult(error=_tail(text), findings=sorted(set(findings)))
    (staging / STAMP).write_text(cluster_file + "\n")
    if out.exists():  # another review finished the same synth first
        shutil.rmtree(staging, ignore_errors=True)
    else:
        staging.rename(out)
    prune(cache_dir, keep=out)
    return SynthResult(templates=read_assembly(out))


def prune(cache_dir: Path, *, keep: Path) -> None:
    """Drop all but the KEEP_OUT_DIRS newest completed out dirs (never `keep`)."""
    done = sorted((p for p in cache_dir.iterdir() if (p / STAMP).is_file()), key=lambda p: p.stat().st_mtime)
    for old in done[:-KEEP_OUT_DIRS]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def read_assembly(out: Path) -> dict[str, Template]:
    """{stack name: template} of a cloud assembly directory, from its manifest."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    templates: dict[str, Template] = {}
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        props = artifact.get("properties", {})
        name = props.get("stackName", artifact_id)
        templates[name] = json.loads((out / props["templateFile"]).read_text(encoding="utf-8"))
    return templates


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
