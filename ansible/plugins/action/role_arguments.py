"""Action plugin: check a host's variables against the argument specs of several roles in one task.

Ansible prepends one validation task to every role that has `meta/argument_specs.yml`. The compute play
runs seven roles in rolling batches, so on a converged rack those checks were seven of a node's twenty
tasks per batch. The play imports its roles with `rolespec_validate: false` and runs this task first: the
same validator (`ansible.module_utils.common.arg_spec`), the same values (the host's variables each spec
names), and an option the role's defaults set is satisfied as it is inside the role.
https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_reuse_roles.html#role-argument-validation
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml
from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible.plugins.action import ActionBase

ROLES = Path(__file__).resolve().parents[2] / "roles"


@functools.cache
def role_options(role: str, entry_point: str = "main") -> dict[str, dict[str, Any]]:
    """The options of a collection role's entry point, `required` lifted where the role's defaults set one."""
    specs_file = ROLES / role / "meta" / "argument_specs.yml"
    if not specs_file.is_file():
        raise AnsibleError(f"role {role!r} has no {specs_file}")
    entry = (yaml.safe_load(specs_file.read_text()) or {}).get("argument_specs", {}).get(entry_point)
    if entry is None:
        raise AnsibleError(f"{specs_file} has no entry point {entry_point!r}")
    defaults_file = ROLES / role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.is_file() else {}
    options: dict[str, dict[str, Any]] = copy.deepcopy(entry.get("options") or {})
    for name in options.keys() & defaults.keys():
        options[name]["required"] = False
    return options


def short_name(role: str) -> str:
    """`slurm_node` of `gpucluster.cluster.slurm_node`."""
    return role.rsplit(".", 1)[-1]


class ActionModule(ActionBase):
    """Validate the host's variables against each named role's argument spec."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        """Fail naming each role whose spec the host's variables do not meet; otherwise ok, unchanged."""
        task_vars = task_vars or {}
        result: dict[str, Any] = super().run(tmp, task_vars)
        roles = self._task.args.get("roles")
        if not isinstance(roles, list) or not roles:
            raise AnsibleError('"roles" must be a non-empty list of role names')
        entry_point = str(self._task.args.get("entry_point", "main"))
        errors: list[str] = []
        for role in map(str, roles):
            options = role_options(short_name(role), entry_point)
            given = self._templar.template({name: task_vars[name] for name in options if name in task_vars})
            checked = ArgumentSpecValidator(options).validate(given, validate_role_argument_spec=True)
            errors += [f"{role}: {message}" for message in checked.error_messages]
        if errors:
            result.update(failed=True, msg="Validation of arguments failed:\n" + "\n".join(errors))
            result["argument_errors"] = errors
            return result
        result.update(changed=False, msg=f"the arguments of {len(roles)} roles meet their specs")
        return result
