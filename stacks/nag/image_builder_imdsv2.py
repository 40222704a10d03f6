"""GpuCluster-ImageBuilderImdsv2: Image Builder build instances require IMDSv2 session tokens."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.template import Finding, Rule, Template


def check(template: Template) -> Iterator[Finding]:
    """Every infrastructure configuration sets InstanceMetadataOptions.HttpTokens to 'required'."""
    for logical_id, props in template.of_type("AWS::ImageBuilder::InfrastructureConfiguration"):
        options = props.get("InstanceMetadataOptions", {})
        if not isinstance(options, dict) or options.get("HttpTokens") != "required":
            yield logical_id, "InstanceMetadataOptions.HttpTokens is not 'required'"


RULE = Rule(
    id="GpuCluster-ImageBuilderImdsv2",
    description="The image build instance runs with an instance profile; IMDSv1 would expose it to SSRF.",
    fix="Set instance_metadata_options http_tokens='required' on the infrastructure configuration.",
    check=check,
)
