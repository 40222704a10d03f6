"""Shared facts about launch templates: their interfaces, instance types and the groups that launch them."""

from __future__ import annotations

import json
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


def _flatten(value: object) -> str:
    """A parameter value as text: a Ref becomes its logical id, any other intrinsic an empty string."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_flatten(p) for p in parts)
    return ref_target(value) or ""


def capacity_groups(template: Template) -> dict[str, Json]:
    """The capacity parameter's groups (what the power programs launch), launch templates as logical ids.

    The capacity stack publishes one JSON parameter per cluster; instance types, subnets and placement
    groups of a launch are there, not in an Auto Scaling group.
    """
    for _, props in template.of_type("AWS::SSM::Parameter"):
        name = props.get("Name")
        if isinstance(name, str) and name.endswith("/capacity"):
            groups: dict[str, Json] = json.loads(_flatten(props.get("Value", ""))).get("groups", {})
            return groups
    return {}


def instance_types(template: Template, lt_id: str) -> list[str]:
    """Every instance type a launch template may start: its own and its group's and fleets' overrides."""
    props = template.properties(lt_id) or {}
    found = [data(props)["InstanceType"]] if isinstance(data(props).get("InstanceType"), str) else []
    for group in capacity_groups(template).values():
        if group.get("launch_template_id") == lt_id:
            found += [t for t in group.get("instance_types", []) if isinstance(t, str)]
    for _, fleet in template.of_type("AWS::EC2::EC2Fleet"):
        for config in fleet.get("LaunchTemplateConfigs", []):
            if ref_target(config.get("LaunchTemplateSpecification", {}).get("LaunchTemplateId")) == lt_id:
                found += [o["InstanceType"] for o in config.get("Overrides", []) if "InstanceType" in o]
    return list(dict.fromkeys(found))


def efa_groups(template: Template) -> Iterator[tuple[str, Json, Json]]:
    """(launch template id, launch template properties, its capacity record or {}) of EFA templates."""
    records = {g.get("launch_template_id"): g for g in capacity_groups(template).values()}
    for lt_id, lt in template.of_type("AWS::EC2::LaunchTemplate"):
        if has_efa(lt):
            yield lt_id, lt, records.get(lt_id, {})
