"""Summarize a synthesized cloud assembly: stacks, resource counts, instances and GPUs per group.

Reads only cdk.out (what `cdk deploy` would deploy), never the cluster file:

    python -m stacks.summary [cdk.out]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from stacks.nag.launch_templates import capacity_groups
from stacks.nag.template import Template


@dataclass(frozen=True)
class GroupSummary:
    """One capacity group as deployed: name, market, instance types and size range."""

    name: str
    market: str
    instance_types: list[str]
    min_count: int
    max_count: int

    @property
    def max_gpus(self) -> int:
        """GPUs at full size (fallback types carry the same GPU count by validation)."""
        itype = INSTANCE_TYPES.get(self.instance_types[0]) if self.instance_types else None
        return self.max_count * (itype.gpu_count if itype else 0)


def stacks(assembly: Path) -> dict[str, dict[str, Any]]:
    """CloudFormation stack name → template, in manifest order."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") == "aws:cloudformation:stack":
            props = artifact["properties"]
            template = json.loads((assembly / props["templateFile"]).read_text(encoding="utf-8"))
            out[props.get("stackName", props["templateFile"])] = template
    return out


def groups(template: dict[str, Any]) -> list[GroupSummary]:
    """Every capacity group the template's capacity parameter publishes for the power programs."""
    return [
        GroupSummary(
            name=name,
            market=str(record.get("market", "")),
            instance_types=[str(t) for t in record.get("instance_types", [])],
            min_count=int(record.get("min_count", 0)),
            max_count=int(record.get("max_count", 0)),
        )
        for name, record in capacity_groups(Template(template)).items()
    ]


def render_summary(assembly: Path) -> str:
    """The summary text for `make demo`."""
    by_stack = stacks(assembly)
    lines = [f"Cloud side ({assembly}): {len(by_stack)} stacks"]
    all_groups: list[GroupSummary] = []
    for name, template in by_stack.items():
        types = Counter(
            r["Type"] for r in template.get("Resources", {}).values() if r["Type"] != "AWS::CDK::Metadata"
        )
        top = ", ".join(f"{t.split('::', 1)[1]} {n}" for t, n in types.most_common(3))
        lines.append(f"  {name:<34} {sum(types.values()):>3} resources ({top})")
        all_groups += groups(template)
        for _, props in Template(template).of_type("AWS::EC2::Instance"):
            lines.append(f"    + instance {props.get('InstanceType')} (fixed)")
    if all_groups:
        lines.append(
            f"  {'group':<14} {'market':<15} {'instance types':<28} {'instances':>9} {'GPUs max':>8}"
        )
        for g in all_groups:
            size = f"{g.min_count}–{g.max_count}"
            lines.append(
                f"  {g.name:<14} {g.market:<15} {', '.join(g.instance_types):<28} {size:>9} {g.max_gpus:>8}"
            )
        total = sum(g.max_gpus for g in all_groups)
        lines.append(f"  total: up to {sum(g.max_count for g in all_groups)} GPU instances, {total} GPUs")
    else:
        lines.append("  no GPU capacity in AWS")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the summary of the assembly directory given (default cdk.out)."""
    args = sys.argv[1:] if argv is None else argv
    assembly = Path(args[0] if args else "cdk.out")
    if not (assembly / "manifest.json").exists():
        print(f"{assembly}: no cloud assembly; run `npx cdk synth` first", file=sys.stderr)
        return 2
    print(render_summary(assembly))
    return 0


if __name__ == "__main__":
    sys.exit(main())
