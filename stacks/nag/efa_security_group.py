"""GpuCluster-EfaSelfReference: EFA interfaces sit in a group that allows all traffic to and from itself."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.launch_templates import EFA_TYPES, interfaces
from stacks.nag.template import Finding, Json, Rule, Template, ref_target

ALL = "-1"


def _self_rules(template: Template, sg_id: str) -> tuple[bool, bool]:
    """Whether the group has an all-traffic ingress from itself and egress to itself."""
    props = template.properties(sg_id) or {}
    ingress: list[tuple[object, Json]] = [(sg_id, r) for r in props.get("SecurityGroupIngress", [])]
    egress: list[tuple[object, Json]] = [(sg_id, r) for r in props.get("SecurityGroupEgress", [])]
    ingress += [
        (ref_target(p.get("GroupId")), p) for _, p in template.of_type("AWS::EC2::SecurityGroupIngress")
    ]
    egress += [
        (ref_target(p.get("GroupId")), p) for _, p in template.of_type("AWS::EC2::SecurityGroupEgress")
    ]
    has_in = any(
        owner == sg_id
        and str(r.get("IpProtocol")) == ALL
        and ref_target(r.get("SourceSecurityGroupId")) == sg_id
        for owner, r in ingress
    )
    has_out = any(
        owner == sg_id
        and str(r.get("IpProtocol")) == ALL
        and ref_target(r.get("DestinationSecurityGroupId")) == sg_id
        for owner, r in egress
    )
    return has_in, has_out


def check(template: Template) -> Iterator[Finding]:
    """Each EFA interface has a security group with self-referencing all-traffic ingress and egress."""
    for lt_id, props in template.of_type("AWS::EC2::LaunchTemplate"):
        for iface in interfaces(props):
            if iface.get("InterfaceType") not in EFA_TYPES:
                continue
            groups = [ref_target(g) for g in iface.get("Groups", [])]
            results = [_self_rules(template, g) for g in groups if g is not None]
            card = iface.get("NetworkCardIndex", 0)
            if not any(i and o for i, o in results):
                missing = "ingress and egress" if not any(i or o for i, o in results) else "ingress or egress"
                yield lt_id, f"network card {card}: no security group allows all {missing} to/from itself"
            for sg_id in groups:
                sg = template.properties(sg_id)
                if sg is not None and not sg.get("SecurityGroupEgress"):
                    yield (
                        lt_id,
                        f"network card {card}: {sg_id} has no inline egress, so AWS keeps allow-all egress",
                    )


RULE = Rule(
    id="GpuCluster-EfaSelfReference",
    description="EFA needs all traffic allowed to and from the same security group (ingress and egress).",
    fix="Put the group's EfaSecurityGroup on every EFA interface.",
    check=check,
)
