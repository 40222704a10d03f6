"""Whether a role's tasks/main.yml includes its converge.yml on a node: its one task's `when`, rendered."""

from __future__ import annotations

from typing import Any

import yaml

from tests.ansible.role_vars import ROLES, role_expression


def main_condition(role: str) -> str:
    """The `when` of the one task in the role's tasks/main.yml (the include of converge.yml)."""
    tasks = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text())
    assert len(tasks) == 1 and tasks[0]["ansible.builtin.include_tasks"]["file"] == "converge.yml"
    return str(tasks[0]["when"])


def include_runs(role: str, shared: dict[str, Any] | None, **overrides: Any) -> bool:
    """Whether converge.yml is included where the play's shared read gave the role `shared` (None: none)."""
    read = {} if shared is None else {f"{role}_node_state": shared}
    runs = role_expression(role, main_condition(role), **read, **overrides)
    assert isinstance(runs, bool), runs  # ansible-core 2.19 wants a boolean `when`
    return runs


def _tasks(role: str, file_name: str) -> list[dict[str, Any]]:
    """The role's task file with its import_tasks expanded in place."""
    tasks: list[dict[str, Any]] = []
    for task in yaml.safe_load((ROLES / role / "tasks" / file_name).read_text()):
        imported = task.get("ansible.builtin.import_tasks")
        tasks += _tasks(role, imported) if imported else [task]
    return tasks


def converge_steps(role: str, own_read: dict[str, Any], **overrides: Any) -> list[str]:
    """The names of converge.yml's tasks whose `when` holds where the role read `own_read` itself."""
    variables = {f"__{role}_own_read": own_read, **overrides}
    ran = []
    for task in _tasks(role, "converge.yml"):
        conditions = task.get("when", [])
        conditions = conditions if isinstance(conditions, list) else [conditions]
        if all(role_expression(role, str(condition), **variables) for condition in conditions):
            ran.append(" ".join(str(task["name"]).split()))
    return ran
