"""A read-only view of one CloudFormation template and the Rule type every rule file defines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]
Finding = tuple[str, str]  # (logical id, what is wrong)


def ref_target(value: object) -> str | None:
    """Logical id named by `{"Ref": X}` or `{"Fn::GetAtt": [X, …]}`; None for anything else."""
    if isinstance(value, dict) and len(value) == 1:
        if "Ref" in value and isinstance(value["Ref"], str):
            return value["Ref"]
        getatt = value.get("Fn::GetAtt")
        if isinstance(getatt, list) and getatt and isinstance(getatt[0], str):
            return getatt[0]
    return None


class Template:
    """Resources of a synthesized template, looked up by type or logical id."""

    def __init__(self, document: Json) -> None:
        self.resources: dict[str, Json] = document.get("Resources", {})

    def of_type(self, type_: str) -> Iterator[tuple[str, Json]]:
        """(logical id, Properties) of every resource of a type."""
        for logical_id, resource in self.resources.items():
            if resource.get("Type") == type_:
                yield logical_id, resource.get("Properties", {})

    def properties(self, logical_id: str | None) -> Json | None:
        """Properties of a resource, or None when the id is not in this template."""
        if logical_id is None or logical_id not in self.resources:
            return None
        props: Json = self.resources[logical_id].get("Properties", {})
        return props

    def type_of(self, logical_id: str | None) -> str | None:
        """Resource type of a logical id in this template."""
        if logical_id is None or logical_id not in self.resources:
            return None
        type_: str = self.resources[logical_id].get("Type", "")
        return type_


@dataclass(frozen=True)
class Rule:
    """One check: an id, what it protects, how to fix a finding, and the check itself."""

    id: str
    description: str
    fix: str
    check: Callable[[Template], Iterator[Finding]]
