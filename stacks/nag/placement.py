"""GpuCluster-EfaPlacement: EFA groups in one AZ with a cluster placement group; none with capacity blocks."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.launch_templates import data, efa_groups
from stacks.nag.template import Finding, Json, Rule, Template, ref_target


def _placement_group(template: Template, asg: Json, lt: Json) -> object:
    """The placement group the ASG or its launch template names, if any."""
    return asg.get("PlacementGroup") or data(lt).get("Placement", {}).get("GroupName")


def check(template: Template) -> Iterator[Finding]:
    """Single subnet (one AZ); a cluster placement group, except for capacity blocks which forbid one."""
    for asg_id, asg, _, lt in efa_groups(template):
        subnets = asg.get("VPCZoneIdentifier", [])
        zones = asg.get("AvailabilityZones", [])
        if len(subnets) != 1 and len(zones) != 1:
            yield asg_id, f"EFA group spans {len(subnets) or len(zones)} subnets/zones; EFA needs one AZ"
        group = _placement_group(template, asg, lt)
        capacity_block = data(lt).get("InstanceMarketOptions", {}).get("MarketType") == "capacity-block"
        if capacity_block:
            if group:
                yield asg_id, "capacity block with a placement group: AWS rejects the launch"
            continue
        pg = template.properties(ref_target(group))
        if template.type_of(ref_target(group)) != "AWS::EC2::PlacementGroup" or pg is None:
            yield asg_id, "EFA group without a cluster placement group in this template"
        elif pg.get("Strategy") != "cluster":
            yield asg_id, f"placement group strategy is {pg.get('Strategy')!r}, EFA needs 'cluster'"


RULE = Rule(
    id="GpuCluster-EfaPlacement",
    description="EFA groups launch in one AZ into a cluster placement group (never with capacity blocks).",
    fix="Keep one subnet per group; use a cluster placement group unless the market is capacity-block.",
    check=check,
)
