"""Changes under ansible/: which roles and files changed, the hosts that run them, what they may restart.

The plays of the collection's site playbook (and of accept.yml, for the role it imports) say which
inventory groups run a role; the cluster file's inventory (gpucluster.ansible_vars) says which hosts those
groups hold. What a role may do to running hosts comes from its own handlers (restart slurmctld or
slurmd, reconfigure Slurm, reboot into a new driver), and the node-file table names the node files the
role writes. A role's tasks can fire any of its handlers, so the review reports the most a change to that
role may need, not less.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpucluster.render.node_files import NODE_FILES
from gpucluster.review.findings import KINDS, Finding

ANSIBLE = "ansible"
SITE = "ansible/playbooks/site.yml"
IMAGE = "ansible/playbooks/image.yml"
COLLECTION = "gpucluster.cluster."
_SERVICE_MODULES = ("ansible.builtin.service", "ansible.builtin.systemd_service", "ansible.builtin.systemd")
# What restarting a daemon means for a busy cluster, as the node-file table's actions name it.
_DAEMON_KINDS = {"slurmctld": "slurmctld-restart", "slurmd": "slurmd-restart"}


@dataclass(frozen=True)
class RoleChange:
    """One role (or playbook, or plugin set) changed by the pull request."""

    name: str
    files: list[str]
    kind: str
    effects: list[str]
    groups: list[str]
    hosts: list[str]
    in_image: bool


def unit_of(path: str) -> str:
    """The unit a changed path belongs to: `role slurm_node`, `playbook site.yml`, `plugins`, …."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[1] == "roles":
        return f"role {parts[2]}"
    if len(parts) > 1 and parts[1] == "plugins":
        return "plugins"
    if path.endswith((".yml", ".yaml")) and ("playbooks" in parts or len(parts) == 2):
        return f"playbook {parts[-1]}"
    return "collection"


def _load_yaml(path: Path) -> Any:
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _role_name(entry: Any) -> str:
    name = entry.get("role", entry.get("name", "")) if isinstance(entry, dict) else str(entry)
    return str(name).removeprefix(COLLECTION)


def _imported_roles(play: dict[str, Any]) -> list[str]:
    """Roles a play imports or includes from its tasks (accept.yml's node_acceptance entry points)."""
    tasks = [t for part in ("pre_tasks", "tasks", "post_tasks") for t in play.get(part) or []]
    return [
        _role_name(task[key])
        for task in tasks
        if isinstance(task, dict)
        for key in ("ansible.builtin.import_role", "ansible.builtin.include_role")
        if isinstance(task.get(key), dict)
    ]


def site_plays(tree: Path, playbook: str = SITE) -> list[tuple[str, list[str]]]:
    """(host pattern, roles) of each play in a playbook (the site playbook by default)."""
    plays = _load_yaml(tree / playbook) or []
    return [
        (str(p["hosts"]), [_role_name(r) for r in p.get("roles", [])] + _imported_roles(p))
        for p in plays
        if isinstance(p, dict) and "hosts" in p
    ]


def cluster_plays(tree: Path) -> list[tuple[str, list[str]]]:
    """The plays that run on the cluster's inventory: site.yml's, then the other playbooks' but image.yml's.

    accept.yml's plays import the node_acceptance role; image.yml runs on an image build host.
    """
    books = sorted(path.relative_to(tree).as_posix() for path in (tree / ANSIBLE / "playbooks").glob("*.yml"))
    return [
        play
        for book in [SITE, *(b for b in books if b not in (SITE, IMAGE))]
        for play in site_plays(tree, book)
    ]


def image_roles(tree: Path) -> set[str]:
    """Roles the node image playbook imports (a change to them changes the cloud node image)."""
    roles: set[str] = set()
    for play in _load_yaml(tree / IMAGE) or []:
        for task in play.get("tasks", []):
            for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                if isinstance(task.get(key), dict):
                    roles.add(_role_name(task[key]))
    return roles


def _roles_in(tasks: Any) -> set[str]:
    """Roles a task list imports or includes, inside blocks too."""
    found: set[str] = set()
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
            if isinstance(task.get(key), dict):
                found.add(_role_name(task[key]))
        for part in ("block", "rescue", "always"):
            found |= _roles_in(task.get(part))
    return found


def including_roles(tree: Path, role: str) -> list[str]:
    """Roles whose tasks import or include `role` (gpu_nvidia_driver includes node_reboot's entry points)."""
    return sorted(
        {
            path.relative_to(tree / ANSIBLE / "roles").parts[0]
            for path in (tree / ANSIBLE / "roles").glob("*/tasks/**/*.yml")
            if role in _roles_in(_load_yaml(path))
        }
        - {role}
    )


def hosts_of(pattern: str, groups: dict[str, list[str]]) -> list[str]:
    """Ansible's host pattern (`a:b`, `a:!b`, `a:&b`) over the inventory's groups."""
    chosen: list[str] = []
    for term in pattern.split(":"):
        if term.startswith("!"):
            chosen = [h for h in chosen if h not in groups.get(term[1:], [])]
        elif term.startswith("&"):
            chosen = [h for h in chosen if h in groups.get(term[1:], [])]
        else:
            chosen += [h for h in groups.get(term, []) if h not in chosen]
    return chosen


def handler_effects(tree: Path, role: str) -> list[tuple[str, str]]:
    """(impact kind, what happens) for each handler of the role that acts on a running host."""
    effects: list[tuple[str, str]] = []
    for handler in _load_yaml(tree / ANSIBLE / "roles" / role / "handlers" / "main.yml") or []:
        label = str(handler.get("listen") or handler.get("name", ""))
        service = next((handler[m] for m in _SERVICE_MODULES if isinstance(handler.get(m), dict)), None)
        command = handler.get("ansible.builtin.command")
        text = str(command.get("cmd", "") if isinstance(command, dict) else command or "")
        if service and service.get("state") == "restarted":
            name = str(service.get("name", ""))
            effects.append((_DAEMON_KINDS.get(name, "in-place"), f"restarts {name}"))
        elif "reboot" in label.lower():
            effects.append(("reboot", "reboots the node into the new driver (drained first)"))
        elif "scontrol reconfigure" in text:
            effects.append(("reconfigure", "`scontrol reconfigure`"))
    return list(dict.fromkeys(effects))


def written_files(role: str) -> list[str]:
    """Node files the node-file table says this role writes."""
    return [f.label for f in NODE_FILES if role == f.role or role in f.also]


def role_changes(tree: Path, changed: list[str], groups: dict[str, list[str]]) -> list[RoleChange]:
    """Group changed paths under ansible/ by unit; resolve hosts and effects in the head tree."""
    by_unit: dict[str, list[str]] = {}
    for path in changed:
        if path.startswith(ANSIBLE + "/"):
            by_unit.setdefault(unit_of(path), []).append(path)
    plays, in_image = site_plays(tree), image_roles(tree)
    role_plays = cluster_plays(tree)
    result = []
    for unit, files in sorted(by_unit.items()):
        role = unit.removeprefix("role ") if unit.startswith("role ") else ""
        # A role another role includes runs where that one runs and may do what that one's handlers do.
        carriers = [role, *including_roles(tree, role)] if role else []
        if role:
            patterns = list(
                dict.fromkeys(hosts for hosts, roles in role_plays if any(c in roles for c in carriers))
            )
        elif unit.startswith("playbook ") and files[0] not in ("ansible/site.yml", SITE):
            # accept.yml, image.yml …
            patterns = list(dict.fromkeys(hosts for hosts, _ in site_plays(tree, files[0])))
        else:
            patterns = [hosts for hosts, _ in plays]
        hosts: list[str] = []
        for pattern in patterns:
            hosts += [h for h in hosts_of(pattern, groups) if h not in hosts]
        effects = list(dict.fromkeys(e for carrier in carriers for e in handler_effects(tree, carrier)))
        kinds = [kind for kind, _ in effects] or ["in-place"]
        result.append(
            RoleChange(
                name=unit,
                files=sorted(files),
                kind=min(kinds, key=KINDS.index),
                effects=[what for _, what in effects],
                groups=patterns,
                hosts=hosts,
                in_image=any(c in in_image for c in carriers) or IMAGE in files,
            )
        )
    return result


def classify_roles(changes: list[RoleChange]) -> list[Finding]:
    """One finding per changed unit: where it runs and the most it may need on running hosts."""
    findings = []
    for change in changes:
        where = f"{len(change.hosts)} host(s) ({', '.join(change.groups) or 'no play of site.yml'})"
        may = (
            "; may: " + ", ".join(change.effects) if change.effects else "; no handler acts on running hosts"
        )
        detail = [f"changed: {f}" for f in change.files]
        if change.name.startswith("role "):
            writes = written_files(change.name.removeprefix("role "))
            detail += [f"writes node files: {', '.join(writes)}"] if writes else []
        if change.in_image:
            detail.append("in the cloud node image (image.yml): new cloud nodes boot the rebuilt image")
        findings.append(
            Finding(change.kind, f"Ansible {change.name} changed: runs on {where}{may}", detail, change.hosts)
        )
    return findings
