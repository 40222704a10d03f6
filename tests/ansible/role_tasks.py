"""The tasks a playbook's plays run, read through the role entry points they import.

A play of ansible/playbooks/accept.yml imports an entry point of the node_acceptance role
(`import_role` … `tasks_from`); the tests that check the acceptance flow's command lines and the order of
its steps read the playbook, follow each play into ansible/roles/<role>/tasks/<entry>.yml and inline the
static `import_tasks` there (with the import's tags), so they see the steps in the order Ansible runs them,
whichever file holds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

COLLECTION = ROOT / "ansible"
ACCEPT = COLLECTION / "playbooks" / "accept.yml"
_ROLE_KEYS = ("ansible.builtin.import_role", "ansible.builtin.include_role")
_BLOCK_PARTS = ("block", "rescue", "always")

Task = dict[str, Any]


def _inline(path: Path, tasks: list[Task]) -> list[Task]:
    """`tasks` of the file at `path` with each static import_tasks replaced by the tasks it imports."""
    out: list[Task] = []
    for task in tasks:
        imported = task.get("ansible.builtin.import_tasks")
        if imported is not None:
            assert isinstance(imported, str), f"{path}: import_tasks with options is not followed here"
            tags = list(task.get("tags", []))  # an import's tags apply to every task it imports
            out += [t | {"tags": tags + list(t.get("tags", []))} for t in tasks_file(path.parent / imported)]
        elif any(part in task for part in _BLOCK_PARTS):
            out.append(task | {part: _inline(path, task[part]) for part in _BLOCK_PARTS if part in task})
        else:
            out.append(task)
    return out


def tasks_file(path: Path) -> list[Task]:
    """The tasks of one tasks file, its imports inlined."""
    return _inline(path, yaml.safe_load(path.read_text(encoding="utf-8")) or [])


def entry_point(task: Task) -> tuple[str, str] | None:
    """(role, entry point) a task imports or includes, or None for a task of its own."""
    for key in _ROLE_KEYS:
        if isinstance(task.get(key), dict):
            role = str(task[key]["name"]).rsplit(".", 1)[-1]
            return role, str(task[key].get("tasks_from", "main")).removesuffix(".yml")
    return None


def play_tasks(play: dict[str, Any], collection: Path = COLLECTION) -> list[Task]:
    """The tasks a play runs, in order: its own, and those of each role entry point it imports."""
    out: list[Task] = []
    for task in play.get("tasks", []):
        entry = entry_point(task)
        if entry is None:
            out.append(task)
        else:
            out += tasks_file(collection / "roles" / entry[0] / "tasks" / f"{entry[1]}.yml")
    return out


def plays(playbook: Path = ACCEPT) -> dict[str, list[Task]]:
    """Each play's name and the tasks it runs, in the playbook's order."""
    data = yaml.safe_load(playbook.read_text(encoding="utf-8"))
    return {str(play["name"]): play_tasks(play, playbook.parents[1]) for play in data}


def flattened(tasks: list[Task]) -> list[Task]:
    """Every task, with those of a block's block, rescue and always parts after the block itself."""
    out: list[Task] = []
    for task in tasks:
        out.append(task)
        for part in _BLOCK_PARTS:
            out += flattened(task.get(part, []))
    return out


def argv(task: Task) -> list[str]:
    """The argv list of an ansible.builtin.command task ([] for other tasks and for an argv variable)."""
    value = (task.get("ansible.builtin.command") or {}).get("argv", [])
    return [str(a) for a in value] if isinstance(value, list) else []
