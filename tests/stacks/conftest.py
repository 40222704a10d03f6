"""Synthesize each cluster once per session (validation plugins on, built-in CFN validation off)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import cx_api
from aws_cdk.assertions import Template

from gpucluster.clusterfile import Cluster, load, load_text
from stacks.cluster_app import ClusterStacks, add_checks, build

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_FILES = sorted((ROOT / "clusters").glob("*.yaml"))
CDK_CONTEXT: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]


class ValidationFailedError(AssertionError):
    """A validation plugin (cdk-nag or ours) reported violations; the message lists them."""


@dataclass
class Synth:
    """One synthesized cluster: its stacks, templates by stack id, and the assembly directory."""

    cluster: Cluster
    stacks: ClusterStacks
    outdir: Path
    templates: dict[str, dict[str, Any]]

    def template(self, stack_id: str) -> Template:
        """The assertions view of one stack's template."""
        return Template.from_json(self.templates[stack_id])


def violations(outdir: Path) -> list[str]:
    """Readable lines of the validation report CDK writes when a plugin fails."""
    report = json.loads((outdir / "validation-report.json").read_text())
    lines = []
    for plugin in report["pluginReports"]:
        for violation in plugin["violations"]:
            paths = [c.get("constructPath") for c in violation.get("violatingConstructs", [])]
            lines.append(
                f"{plugin['pluginName']}: {violation['ruleName']}: {violation['description'][:200]} {paths}"
            )
    return lines


def synthesize(cluster: Cluster, outdir: Path, *, source: str, validate: bool = False) -> Synth:
    """Build and synthesize a cluster's app with every validation plugin registered."""
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT, builtin_cloud_formation_validation=validate)
    stacks = build(app, cluster, source=source)
    add_checks(app)
    try:
        assembly = app.synth()
    except RuntimeError as exc:
        if "ValidationFailed" not in str(exc):
            raise
        raise ValidationFailedError("\n".join(violations(outdir))) from None
    # Error annotations fail `cdk synth` in the CLI; in-process they only land in the assembly.
    errors = [
        f"{message.id}: {message.entry.data}"
        for artifact in assembly.stacks
        for message in artifact.messages
        if message.level == cx_api.SynthesisMessageLevel.ERROR
    ]
    if errors:
        raise ValidationFailedError("\n".join(errors))
    templates = {
        stack.node.id: json.loads((outdir / f"{stack.artifact_id}.template.json").read_text())
        for stack in stacks.all()
    }
    return Synth(cluster, stacks, outdir, templates)


@pytest.fixture(scope="session")
def synth_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Synth]:
    """Synthesize a shipped cluster file (by stem) once per session."""
    cache: dict[str, Synth] = {}

    def get(stem: str) -> Synth:
        if stem not in cache:
            path = ROOT / "clusters" / f"{stem}.yaml"
            cache[stem] = synthesize(
                load(path).cluster, tmp_path_factory.mktemp(stem), source=f"clusters/{stem}.yaml"
            )
        return cache[stem]

    return get


@pytest.fixture(scope="session")
def example_synth(synth_file: Callable[[str], Synth]) -> Synth:
    return synth_file("example")


@pytest.fixture(scope="session")
def cloud_only_synth(synth_file: Callable[[str], Synth]) -> Synth:
    return synth_file("cloud-only")


def variant(edit: Callable[[dict[str, Any]], None], base: str = "example") -> Cluster:
    """A shipped cluster with `edit` applied to its parsed YAML, validated by the real loader."""
    import yaml

    document = yaml.safe_load((ROOT / "clusters" / f"{base}.yaml").read_text())
    edit(document)
    return load_text(yaml.safe_dump(document), source="variant.yaml").cluster


def _networked(doc: dict[str, Any]) -> None:
    aws = doc["aws"]
    aws["egress"] = True
    aws["vpn"] = {"customer_gateway_address": "203.0.113.10", "bgp_asn": 65010}
    aws["checkpoint"]["encryption"] = "s3"
    aws["budget"]["emails"] = ["finance@example.com"]


@pytest.fixture(scope="session")
def networked_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Example with egress, a site-to-site VPN, SSE-S3 checkpoints and budget e-mails."""
    return synthesize(variant(_networked), tmp_path_factory.mktemp("networked"), source="variant.yaml")
