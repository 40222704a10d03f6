"""Action plugin: run gpucluster_node_state with the node's plain Python, one SSH command, no AnsiballZ.

A builtin module run costs about 0.25 s of node CPU, mostly Python compiling Ansible's module_utils
out of the AnsiballZ zip; on a 2-core test rack running every node, that is what a re-run spends.
The reading needs only the standard library, so this plugin sends the module file's source to
`python3 -c` (become applies as for any command) and parses the JSON it prints: a few tens of ms.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path
from typing import Any

from ansible import constants
from ansible.plugins.action import ActionBase

MODULE_SOURCE = Path(__file__).resolve().parent.parent / "modules" / "node_state.py"


def _module_argument_spec() -> dict[str, dict[str, Any]]:
    # The module file imports nothing from Ansible at load time, so loading it here is cheap.
    spec = importlib.util.spec_from_file_location("gpucluster_node_state_module", MODULE_SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argument_spec: dict[str, dict[str, Any]] = module.ARGUMENT_SPEC
    return argument_spec


ARGUMENT_SPEC = _module_argument_spec()
SOURCE = MODULE_SOURCE.read_text()  # read once per worker's import, not per host-task


class ActionModule(ActionBase):
    """Read a node's state in one plain-Python command."""

    TRANSFERS_FILES = False
    _supports_check_mode = True  # read-only

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        """Validate the arguments, run the reader on the node, return its answer as the task result."""
        task_vars = task_vars or {}
        result: dict[str, Any] = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        argv = [self._python(task_vars), "-c", SOURCE, "--direct", json.dumps(args)]
        command = " ".join(shlex.quote(part) for part in argv)
        done = self._low_level_execute_command(command)
        if done.get("rc") != 0:
            result.update(failed=True, msg=f"reading the node state failed: {done.get('stderr', '').strip()}")
            return result
        try:
            result.update(json.loads(done["stdout"]))
        except ValueError:
            result.update(failed=True, msg=f"the node state reader printed no JSON: {done['stdout'][:500]}")
        return result

    @staticmethod
    def _python(task_vars: dict[str, Any]) -> str:
        configured = task_vars.get("ansible_python_interpreter") or constants.config.get_config_value(
            "INTERPRETER_PYTHON", variables=task_vars
        )
        return str(configured) if str(configured).startswith("/") else "/usr/bin/python3"
