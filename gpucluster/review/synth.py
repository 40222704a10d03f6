"""Synthesize one tree's CloudFormation by running its CDK app, reusing an unchanged out dir.

The app is run the way `cdk synth` runs it (the `app` command of the tree's cdk.json, with the
CLI's default context), without the CLI around it: the CLI adds seconds and nothing the review uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.review.errors import ReviewError
from gpucluster.review.gitrepo import CODE_PATHS, NOT_INPUTS
from gpucluster.review.validation import findings_in

Template = dict[str, object]
STAMP = ".gpucluster-review-complete"
# Where `npm ci` links the Node LTS that package.json pins (node-<os>-<arch>), in this checkout.
PINNED_NODE_BIN = Path(__file__).resolve().parents[2] / "node_modules" / ".bin"
KEEP_OUT_DIRS = 8  # a base and a head for a few cluster files; older out dirs are pruned
# Never let synth reach AWS: even dummy credentials make the app try STS.
_AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
# What `cdk synth` adds to the context by default, so a review's templates are the ones it would
# synthesize (path and asset metadata, CDKMetadata, bundling of every stack).
CLI_DEFAULT_CONTEXT: dict[str, object] = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
    "aws:cdk:bundling-stacks": ["**"],
}


@dataclass(frozen=True)
class SynthResult:
    """Templates by stack name, or the failure and the validation findings that caused it."""

    templates: dict[str, Template] = field(default_factory=dict)
    error: str | None = None
    findings: list[str] = field(default_factory=list)
    reused: bool = False


def code_hash(tree: Path) -> str:
    """sha256 over every synth input except the cluster file (app, stacks, core, templates, lock)."""
    digest = hashlib.sha256()
    paths: list[Path] = []
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


def inputs_hash(tree: Path, cluster_file: str, *, code: str | None = None) -> str:
    """sha256 over the cluster file and every synth input: the key of the out dir cache."""
    digest = hashlib.sha256((code or code_hash(tree)).encode())
    path = tree / cluster_file
    digest.update(cluster_file.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
    return digest.hexdigest()


def cdk_cli(node_modules: Path) -> list[str]:
    """The pinned CDK CLI as a command (what `npx cdk` runs), or bad input when not installed."""
    entry = node_modules / "aws-cdk" / "bin" / "cdk"
    if not entry.is_file():
        raise ReviewError(f"{entry}: the CDK CLI is not installed; run `make install` (npm ci) first")
    node = node_modules / ".bin" / "node"
    return [str(node) if node.is_file() else "node", str(entry)]


def synth_env() -> dict[str, str]:
    """The environment for an offline synth: no telemetry, no AWS credentials, this venv first.

    Then the checkout's node_modules/.bin, as under `npx cdk`: the app's jsii runtime starts the Node
    LTS that package.json pins (a supported Node, so jsii prints no end-of-life banner).
    """
    env = {k: v for k, v in os.environ.items() if k not in _AWS_VARS}
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    first = [str(Path(sys.executable).parent)] + ([str(PINNED_NODE_BIN)] if PINNED_NODE_BIN.is_dir() else [])
    env["PATH"] = os.pathsep.join([*first, env.get("PATH", "")])
    return env


def app_settings(tree: Path, cluster_file: str) -> tuple[list[str], dict[str, object]]:
    """The tree's app command and its context (CLI defaults, cdk.json, cdk.context.json, cluster)."""
    settings_file = tree / "cdk.json"
    try:
        settings = json.loads(settings_file.read_text(encoding="utf-8"))
        command = shlex.split(settings["app"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReviewError(f"{settings_file}: no usable `app` command ({exc}); check cdk.json") from None
    context: dict[str, object] = {**CLI_DEFAULT_CONTEXT, **settings.get("context", {})}
    saved = tree / "cdk.context.json"
    if saved.is_file():
        context.update(json.loads(saved.read_text(encoding="utf-8")))
    context["cluster"] = cluster_file
    return command, context


def cached(tree: Path, cluster_file: str, cache_dir: Path, *, code: str | None = None) -> SynthResult | None:
    """The completed out dir with the same inputs, if one exists (marked recently used)."""
    out = cache_dir / inputs_hash(tree, cluster_file, code=code)
    if not (out / STAMP).is_file():
        return None
    os.utime(out)  # recently used: pruned last
    return SynthResult(templates=read_assembly(out), reused=True)


def staging_dir(cache_dir: Path, key: str) -> Path:
    """A fresh private directory for one synth's output, next to where it will be kept."""
    staging = cache_dir / f"{key}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    shutil.rmtree(staging, ignore_errors=True)
    return staging


def keep(staging: Path, cache_dir: Path, key: str, cluster_file: str) -> SynthResult:
    """Mark a successful synth complete, move it under its key and read its templates."""
    out = cache_dir / key
    (staging / STAMP).write_text(cluster_file + "\n")
    if out.exists():  # another review finished the same synth first
        shutil.rmtree(staging, ignore_errors=True)
    else:
        staging.rename(out)
    prune(cache_dir, keep=out)
    return SynthResult(templates=read_assembly(out))


def failed(staging: Path, output: str) -> SynthResult:
    """A failed synth: its tail and the validation findings of its report and output."""
    findings = findings_in(staging / "validation-report.json", output)
    shutil.rmtree(staging, ignore_errors=True)
    return SynthResult(error=_tail(output), findings=findings)


def synth(tree: Path, cluster_file: str, *, cache_dir: Path) -> SynthResult:
    """Templates of cluster_file as synthesized in tree; an out dir with the same inputs is reused."""
    if not (tree / cluster_file).is_file():
        return SynthResult()
    hit = cached(tree, cluster_file, cache_dir)
    if hit is not None:
        return hit
    key = inputs_hash(tree, cluster_file)
    staging = staging_dir(cache_dir, key)
    command, context = app_settings(tree, cluster_file)
    env = {**synth_env(), "CDK_OUTDIR": str(staging), "CDK_CONTEXT_JSON": json.dumps(context)}
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return failed(staging, result.stderr + result.stdout)
    return keep(staging, cache_dir, key, cluster_file)


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
