"""GpuCluster-Imdsv2: launch templates and instances require IMDSv2 session tokens."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.launch_templates import data
from stacks.nag.template import Finding, Json, Rule, Template, ref_target


def _requires_tokens(lt: Json | None) -> bool:
    """Whether a launch template requires IMDSv2 tokens (or turns the metadata service off)."""
    if lt is None:
        return False
    options = data(lt).get("MetadataOptions", {})
    return bool(options.get("HttpTokens") == "required" or options.get("HttpEndpoint") == "disabled")


def check(template: Template) -> Iterator[Finding]:
    """Every launch template requires tokens; every instance uses such a launch template."""
    for lt_id, props in template.of_type("AWS::EC2::LaunchTemplate"):
        if not _requires_tokens(props):
            yield lt_id, "MetadataOptions.HttpTokens is not 'required'"
    by_name = {
        props["LaunchTemplateName"]: lt_id
        for lt_id, props in template.of_type("AWS::EC2::LaunchTemplate")
        if isinstance(props.get("LaunchTemplateName"), str)
    }
    for instance_id, props in template.of_type("AWS::EC2::Instance"):
        spec = props.get("LaunchTemplate", {})
        used = ref_target(spec.get("LaunchTemplateId")) or by_name.get(str(spec.get("LaunchTemplateName")))
        if not _requires_tokens(template.properties(used)):
            yield instance_id, "instance without a launch template that requires IMDSv2"


RULE = Rule(
    id="GpuCluster-Imdsv2",
    description="Instance metadata needs IMDSv2 session tokens (blocks SSRF credential theft).",
    fix="Set require_imdsv2=True on the launch template or instance.",
    check=check,
)
