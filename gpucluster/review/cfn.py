"""CloudFormation diff per stack through the CDK's own engine (@aws-cdk/cloudformation-diff)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucluster.review.errors import ReviewError
from gpucluster.review.synth import Template

SCRIPT = Path(__file__).with_name("cfn_diff.js")


@dataclass(frozen=True)
class PropertyChange:
    """One changed property of a resource, with its own impact (WILL_REPLACE, WILL_UPDATE…)."""

    name: str
    impact: str | None
    old: Any
    new: Any


@dataclass(frozen=True)
class ResourceChange:
    """A resource created, changed or removed; impact as CloudFormation would carry it out."""

    stack: str
    logical_id: str
    type: str
    change: str  # add | remove | update
    impact: (
        str  # WILL_CREATE | WILL_UPDATE | WILL_REPLACE | MAY_REPLACE | WILL_DESTROY | WILL_ORPHAN | NO_CHANGE
    )
    properties: list[PropertyChange] = field(default_factory=list)
    old: dict[str, Any] = field(default_factory=dict)  # the resource as in the base template
    new: dict[str, Any] = field(default_factory=dict)  # the resource as in the head template


@dataclass(frozen=True)
class StackDiff:
    """Everything that changes in one stack."""

    stack: str
    resources: list[ResourceChange]
    permissions_broadened: bool
    iam: list[str]
    security_groups: list[str]


def diff_stacks(old: dict[str, Template], new: dict[str, Template], *, node_modules: Path) -> list[StackDiff]:
    """Diff every stack present on either side; stacks without changes are left out."""
    names = sorted(set(old) | set(new))
    pairs = {n: {"old": old.get(n, {}), "new": new.get(n, {})} for n in names if old.get(n) != new.get(n)}
    if not pairs:
        return []
    env = {**os.environ, "GPUCLUSTER_NODE_MODULES": str(node_modules)}
    result = subprocess.run(
        ["node", str(SCRIPT)], input=json.dumps(pairs), capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise ReviewError(f"cloudformation diff failed (is npm ci done?): {result.stderr.strip()[-2000:]}")
    raw: dict[str, dict[str, Any]] = json.loads(result.stdout)
    diffs = [_stack(name, raw[name], pairs[name]) for name in names if name in raw]
    return [d for d in diffs if d.resources or d.iam or d.security_groups]


def _stack(name: str, raw: dict[str, Any], pair: dict[str, Template]) -> StackDiff:
    old_res = _resources(pair["old"])
    new_res = _resources(pair["new"])
    resources = [
        ResourceChange(
            stack=name,
            logical_id=r["logical_id"],
            type=r["type"],
            change=r["change"],
            impact=r["impact"],
            properties=[PropertyChange(p["name"], p["impact"], p["old"], p["new"]) for p in r["properties"]],
            old=old_res.get(r["logical_id"], {}),
            new=new_res.get(r["logical_id"], {}),
        )
        for r in raw["resources"]
    ]
    return StackDiff(
        stack=name,
        resources=resources,
        permissions_broadened=bool(raw["permissions_broadened"]),
        iam=list(raw["iam"]),
        security_groups=list(raw["security_groups"]),
    )


def _resources(template: Template) -> dict[str, dict[str, Any]]:
    resources = template.get("Resources", {})
    return resources if isinstance(resources, dict) else {}
