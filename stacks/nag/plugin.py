"""The rule pack as a CDK validation plugin: runs every rule on every synthesized template."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import jsii

from stacks.nag import (
    checkpoint_bucket,
    efa_layout,
    efa_security_group,
    image_builder_imdsv2,
    imdsv2,
    no_public_ip,
    placement,
)
from stacks.nag.template import Json, Rule, Template

RULES: tuple[Rule, ...] = (
    efa_layout.RULE,
    efa_security_group.RULE,
    placement.RULE,
    imdsv2.RULE,
    image_builder_imdsv2.RULE,
    no_public_ip.RULE,
    checkpoint_bucket.RULE,
)


def findings(document: Json) -> list[tuple[Rule, str, str]]:
    """(rule, logical id, message) of every finding of every rule on one template."""
    template = Template(document)
    return [(rule, lid, msg) for rule in RULES for lid, msg in rule.check(template)]


@jsii.implements(cdk.IPolicyValidationPlugin)
class GpuClusterChecks:
    """Validation plugin for GPU-cluster rules (EFA layout and security, placement, IMDSv2, buckets)."""

    @property
    def name(self) -> str:
        """Name shown in the validation report."""
        return "gpucluster-rules"

    @property
    def version(self) -> str:
        """Version of the rule pack."""
        return "1.0.0"

    @property
    def rule_ids(self) -> list[str]:
        """Ids of the rules the pack evaluates."""
        return [rule.id for rule in RULES]

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        """Run every rule on every template of the assembly."""
        violations: list[cdk.PolicyViolation] = []
        for path in context.template_paths:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
            for rule, logical_id, message in findings(document):
                resource = cdk.PolicyViolatingResource(
                    resource_logical_id=logical_id, template_path=path, locations=[message]
                )
                violations.append(
                    cdk.PolicyViolation(
                        rule_name=rule.id,
                        description=f"{rule.description} {message}",
                        fix=rule.fix,
                        violating_resources=[resource],
                        severity="error",
                    )
                )
        return cdk.PolicyValidationPluginReport(success=not violations, violations=violations)
