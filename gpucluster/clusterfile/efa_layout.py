"""EFA network-interface layouts: one EFA interface on every network card of an instance type.

Layouts follow https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html:
the primary interface is card 0 device 0; each further card carries one EFA interface.
"""

from __future__ import annotations

from collections import Counter

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES, InstanceType
from gpucluster.clusterfile.model.aws import CapacityGroup, EfaInterface

_EFA_TYPES = ("efa", "efa-only")


def standard_layout(layout: str, itype: InstanceType) -> list[EfaInterface]:
    """The `efa` layout (an EFA on every card) or `efa-only` (ENA primary + EFA-only on every card)."""
    cards = range(1, itype.max_efa_interfaces)
    if layout == "efa":
        first = [EfaInterface(network_card=0, device_index=0, type="efa")]
        return first + [EfaInterface(network_card=c, device_index=1, type="efa") for c in cards]
    first = [
        EfaInterface(network_card=0, device_index=0, type="interface"),
        EfaInterface(network_card=0, device_index=1, type="efa-only"),
    ]
    return first + [EfaInterface(network_card=c, device_index=1, type="efa-only") for c in cards]


def interfaces_for(group: CapacityGroup, itype: InstanceType) -> list[EfaInterface]:
    """The interfaces a launch template gets: the explicit list, the named layout, or ENA only."""
    if not group.efa:
        return [EfaInterface(network_card=0, device_index=0, type="interface")]
    if group.efa_interfaces is not None:
        return list(group.efa_interfaces)
    return standard_layout(group.efa_layout, itype)


def layout_problems(interfaces: list[EfaInterface], itype: InstanceType) -> list[str]:
    """What is wrong with a layout for an instance type; empty when it is right."""
    problems: list[str] = []
    cards = itype.max_efa_interfaces
    slots = Counter((i.network_card, i.device_index) for i in interfaces)
    for (card, device), count in sorted(slots.items()):
        if count > 1:
            problems.append(f"network card {card} device {device} is listed {count} times")
    for card in sorted({i.network_card for i in interfaces if i.network_card >= cards}):
        problems.append(f"network card {card} does not exist on {itype.name} (cards 0–{cards - 1})")
    efa_per_card = Counter(i.network_card for i in interfaces if i.type in _EFA_TYPES)
    for card in range(cards):
        if efa_per_card[card] == 0:
            problems.append(f"network card {card} has no EFA interface ({itype.name} has {cards})")
        elif efa_per_card[card] > 1:
            problems.append(f"network card {card} has {efa_per_card[card]} EFA interfaces")
    primary = [i for i in interfaces if (i.network_card, i.device_index) == (0, 0)]
    if not primary:
        problems.append("network card 0 device 0 (the primary interface) is missing")
    elif primary[0].type == "efa-only":
        problems.append("network card 0 device 0 is the primary interface and cannot be efa-only")
    return problems


def launch_types(group: CapacityGroup) -> list[str]:
    """Every instance type a group's launch template may start: the primary, then the fallbacks."""
    return list(dict.fromkeys([group.instance_type, *group.fallback_instance_types]))


def group_layout_problems(group: CapacityGroup) -> dict[str, list[str]]:
    """Per instance type the group may launch, what is wrong with its launch template's layout there.

    One launch template serves every type of a group, laid out for the primary type; the rule
    GpuCluster-EfaLayout applies `layout_problems` to the synthesized template the same way.
    Types missing from the catalog are left to the catalog check.
    """
    primary = INSTANCE_TYPES.get(group.instance_type)
    if primary is None or not group.efa:
        return {}
    interfaces = interfaces_for(group, primary)
    found = {
        name: layout_problems(interfaces, INSTANCE_TYPES[name])
        for name in launch_types(group)
        if name in INSTANCE_TYPES
    }
    return {name: problems for name, problems in found.items() if problems}
