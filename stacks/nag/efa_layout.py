"""GpuCluster-EfaLayout: one EFA interface on every network card, laid out as AWS documents."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import ValidationError

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.efa_layout import layout_problems
from gpucluster.clusterfile.model.aws import EfaInterface
from stacks.nag.launch_templates import has_efa, instance_types, interfaces
from stacks.nag.template import Finding, Json, Rule, Template


def _as_model(raw: list[Json]) -> list[EfaInterface] | str:
    """The interfaces as the model sees them, or why they cannot be read."""
    try:
        return [
            EfaInterface(
                network_card=i.get("NetworkCardIndex", 0),
                device_index=i.get("DeviceIndex", 0),
                type=i.get("InterfaceType", "interface"),
            )
            for i in raw
        ]
    except ValidationError as exc:
        return f"unreadable network interfaces: {exc.errors()[0]['msg']}"


def check(template: Template) -> Iterator[Finding]:
    """Every EFA launch template matches the card layout of every instance type it may start."""
    for lt_id, props in template.of_type("AWS::EC2::LaunchTemplate"):
        types = instance_types(template, lt_id)
        efa_capable = [t for t in types if t in INSTANCE_TYPES and INSTANCE_TYPES[t].max_efa_interfaces]
        if not has_efa(props) and not (efa_capable and not interfaces(props)):
            continue
        parsed = _as_model(interfaces(props))
        if isinstance(parsed, str):
            yield lt_id, parsed
            continue
        if not types:
            yield lt_id, "EFA launch template without an instance type: the layout cannot be checked"
        for name in types:
            itype = INSTANCE_TYPES.get(name)
            if itype is None:
                yield lt_id, f"{name} is not in the catalog: its network cards are unknown"
                continue
            for problem in layout_problems(parsed, itype):
                yield lt_id, f"{name}: {problem}"


RULE = Rule(
    id="GpuCluster-EfaLayout",
    description="EFA launch templates carry one EFA interface on every network card of the instance type.",
    fix="Use efa_layout (efa-only or efa) or list one interface per card in efa_interfaces.",
    check=check,
)
