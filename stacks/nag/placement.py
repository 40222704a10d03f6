"""GpuCluster-EfaPlacement: EFA groups in one AZ with a cluster placement group; none with capacity blocks."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.launch_templates import data, efa_groups
from stacks.nag.template import Finding, Rule, Template, ref_target


def check(template: Template) -> Iterator[Finding]:
    """Single subnet (one AZ); a cluster placement group, except for capacity blocks which forbid one."""
    for lt_id, lt, record in efa_groups(template):
        subnets = record.get("subnet_ids", [])
        if len(subnets) > 1:
            yield lt_id, f"EFA group spans {len(subnets)} subnets; EFA needs one AZ"
        group = data(lt).get("Placement", {}).get("GroupName")
        capacity_block = data(lt).get("InstanceMarketOptions", {}).get("MarketType") == "capacity-block"
        if capacity_block:
            if group:
                yield lt_id, "capacity block with a placement group: AWS rejects the launch"
            continue
        pg = template.properties(ref_target(group))
        if template.type_of(ref_target(group)) != "AWS::EC2::PlacementGroup" or pg is None:
            yield lt_id, "EFA group without a cluster placement group in this template"
        elif pg.get("Strategy") != "cluster":
            yield lt_id, f"placement group strategy is {pg.get('Strategy')!r}, EFA needs 'cluster'"


RULE = Rule(
    id="GpuCluster-EfaPlacement",
    description="EFA groups launch in one AZ into a cluster placement group (never with capacity blocks).",
    fix="Keep one subnet per group; use a cluster placement group unless the market is capacity-block.",
    check=check,
)
