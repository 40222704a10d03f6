"""A role's variables rendered by Ansible's templar as a play would, and node-state answers to feed them.

`role_expression` templates one expression over a role's defaults and vars with a node's facts, the role's
templates/ on the search path (its template lookups) and the collection's filters: the role's own wiring of
inputs, file bodies and plan filter, without a node. `node_state` builds what gpucluster.cluster.node_state
answers for a node holding the given files, packages and services.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tests.ansible.filter_plugins import collection_loader
from tests.conftest import ROOT

ROLES = ROOT / "ansible" / "roles"
DEBIAN = {
    "distribution": "Debian",
    "os_family": "Debian",
    "distribution_major_version": "12",
    "distribution_version": "12.11",
    "distribution_release": "bookworm",
    "architecture": "x86_64",
}
ROCKY = {
    **DEBIAN,
    "distribution": "Rocky",
    "os_family": "RedHat",
    "distribution_major_version": "9",
    "distribution_version": "9.5",
}


def _trusted(value: Any) -> Any:
    from ansible.template import trust_as_template

    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    return value


def role_expression(
    role: str, expression: str, *, facts: dict[str, Any] | None = None, roles: Path = ROLES, **overrides: Any
) -> Any:
    """One expression over the role's defaults and vars, as Ansible's templar renders it for a node."""
    collection_loader()
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    loader = DataLoader()
    role_dir = roles / role
    variables = {
        **_trusted(loader.load_from_file(str(role_dir / "defaults/main.yml"))),
        **_trusted(loader.load_from_file(str(role_dir / "vars/main.yml"))),
        "ansible_facts": facts or DEBIAN,
        "inventory_hostname": "n1",
        "ansible_check_mode": False,
        "ansible_search_path": [str(role_dir)],
        **overrides,
    }
    return Templar(loader=loader, variables=variables).template(trust_as_template("{{ " + expression + " }}"))


def file_entry(text: str | None = None, *, kind: str = "file", mode: str = "0644") -> dict[str, Any]:
    """A node_state `files` entry: a root-owned file holding text (a directory or a link without text)."""
    entry: dict[str, Any] = {"exists": True, "type": kind, "mode": mode, "owner": "root", "group": "root"}
    if text is not None:
        entry["checksum"] = hashlib.sha1(text.encode()).hexdigest()
    return entry


def node_state(
    *,
    files: dict[str, dict[str, Any]] | None = None,
    missing: list[str] | None = None,
    installed: dict[str, str] | None = None,
    held: list[str] | None = None,
    services: dict[str, tuple[bool, bool]] | None = None,
) -> dict[str, Any]:
    """A node_state answer: files (path: file_entry), paths missing, packages (name: version), held, units."""
    return {
        "changed": False,
        "files": {**{path: {"exists": False} for path in missing or []}, **(files or {})},
        "texts": {},
        "services": {
            unit: {"active": active, "enabled": enabled, "load": "loaded", "condition_failed": False}
            for unit, (active, enabled) in (services or {}).items()
        },
        "users": {},
        "groups": {},
        "installed": sorted(installed or {}),
        "held": sorted(held or []),
        "versions": dict(installed or {}),
    }


def set_fact_expression(role: str, tasks: str, fact: str) -> str:
    """The Jinja expression the first set_fact of a role's tasks/<tasks> gives a fact (without the braces)."""
    import yaml

    task = yaml.safe_load((ROLES / role / "tasks" / tasks).read_text())[0]
    return str(task["ansible.builtin.set_fact"][fact]).strip().removeprefix("{{").removesuffix("}}").strip()
