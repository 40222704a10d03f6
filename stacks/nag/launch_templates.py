"""Shared facts about launch templates: their interfaces, instance types and the groups that use them."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.template import Json, Template, ref_target

EFA_TYPES = ("efa", "efa-only")


def data(props: Json) -> Json:
    """LaunchTemplateData of a launch template's properties."""
    found: Json = props.get("LaunchTemplateData", {})
    return found


def interfaces(props: Json) -> list[Json]:
    """NetworkInterfaces of a launch template's properties."""
    found: list[Json] = data(props).get("NetworkInterfaces", [])
    return found


def has_efa(props: Json) -> bool:
    """Whether any interface of the launch template is an EFA interface."""
    return any(i.get("InterfaceType") in EFA_TYPES for i in interfaces(props))


def asg_launch_template(props: Json) -> tuple[str | None, list[str]]:
    """(launch template logical id, override instance types) of an Auto Scaling group."""
    if "LaunchTemplate" in props:
        return ref_target(props["LaunchTemplate"].get("LaunchTemplateId")), []
    mixed = props.get("MixedInstancesPolicy", {}).get("LaunchTemplate", {})
    spec = mixed.get("LaunchTemplateSpecification", {})
    types = [o["InstanceType"] for o in mixed.get("Overrides", []) if isinstance(o.get("InstanceType"), str)]
    return ref_target(spec.get("LaunchTemplateId")), types


def instance_types(template: Template, lt_id: str) -> list[str]:
    """Every instance type a launch template may start: its own and its groups' and fleets' overrides."""
    props = template.properties(lt_id) or {}
    found = [data(props)["InstanceType"]] if isinstance(data(props).get("InstanceType"), str) else []
    for _, asg in template.of_type("AWS::AutoScaling::AutoScalingGroup"):
        used, overrides = asg_launch_template(asg)
        if used == lt_id:
            found += overrides
    for _, fleet in template.of_type("AWS::EC2::EC2Fleet"):
        for config in fleet.get("LaunchTemplateConfigs", []):
            if ref_target(config.get("LaunchTemplateSpecification", {}).get("LaunchTemplateId")) == lt_id:
                found += [o["InstanceType"] for o in config.get("Overrides", []) if "InstanceType" in o]
    return list(dict.fromkeys(found))


def efa_groups(template: Template) -> Iterator[tuple[str, Json, str, Json]]:
    """(ASG id, ASG properties, launch template id, launch template properties) for EFA groups."""
    for asg_id, asg in template.of_type("AWS::AutoScaling::AutoScalingGroup"):
        lt_id, _ = asg_launch_template(asg)
        lt = template.properties(lt_id)
        if lt_id is not None and lt is not None and has_efa(lt):
            yield asg_id, asg, lt_id, lt
