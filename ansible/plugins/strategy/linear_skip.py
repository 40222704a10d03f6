"""Strategy plugin: Ansible's linear strategy, but a task whose `when` is false skips without a worker.

Every host-task costs ansible-playbook a forked worker process and a result round trip (about 40 ms of
CPU here), even when the worker only finds the task's `when` false. A converged rack's re-run skips about
half of its tasks, so on a large rack those forks are most of the run's controller CPU. This strategy
evaluates a plain task's `when` in the controller process with the variables the worker would get; where
it is false the skipped result goes through the same result queue a worker's would (callbacks, register,
stats), and no worker starts. Anything it cannot judge exactly as the worker would (loops, delegation,
run_once, a condition naming a connection variable, an error) goes to a worker as usual. Likewise a role's
implicit argument check (validate_argument_spec, which needs no connection) runs here where it passes; a
failing one goes to a worker, which reports it as always. It also installs template_caches into this
process (compile each template once, resolve each filter once).
Written against ansible-core 2.19 (its StrategyBase internals): where those imports are missing it behaves as
linear; other changes to those internals are not guarded (-e gpucluster_strategy=linear runs the builtin).
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.template_caches import (
    install as install_template_caches,
)

from ansible import constants

DOCUMENTATION = r"""
name: linear_skip
short_description: Linear, skipping false-`when` tasks in the controller process without a worker
description:
  - Ansible's linear strategy (task by task, all hosts in lockstep), with one change. A task that has a
    C(when) and no loop, delegation or run_once is judged in the controller process first; where the
    condition is false, the task is reported skipped exactly as a worker would report it, without forking
    a worker for it. A role's argument check that passes is judged the same way. Everything else runs as
    with ansible.builtin.linear.
  - A converged rack's re-run skips about half of its host-tasks; each costs a fork and a worker
    otherwise.
author: gpucluster
"""

try:  # the internals this plugin relies on; absent on another ansible-core, where it behaves as linear
    from ansible._internal._templating._engine import TemplateEngine
    from ansible.executor.task_result import _RawTaskResult
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible.utils.vars import combine_vars
except ImportError:  # pragma: no cover - only on an ansible-core other than the pinned one
    _RawTaskResult = None

# Variables the worker adds from the play context before it judges `when` (PlayContext.update_vars); a
# condition naming one is left to the worker, which knows their values for this task.
_CONNECTION_VARIABLES = frozenset(
    name for names in constants.MAGIC_VARIABLE_MAPPING.values() for name in names
)


# The action every role's implicit argument check runs; it needs no connection (its _requires_connection).
_VALIDATE_ARGUMENT_SPEC = frozenset({"ansible.builtin.validate_argument_spec", "validate_argument_spec"})


def _judged_here(task: Any) -> bool:
    """Whether this process can stand in for the worker: no loop, delegation or run_once."""
    if _RawTaskResult is None:
        return False
    return not (task.loop or task.loop_with or task.delegate_to or task.run_once)


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear, with false-`when` tasks and passing argument checks done in this process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        install_template_caches()

    def _queue_task(self, host: Any, task: Any, task_vars: dict[str, Any], play_context: Any) -> None:
        result = self._skipped_result(task, task_vars)
        if result is None:
            result = self._validated_arguments_result(task, task_vars)
        if result is None:
            super()._queue_task(host, task, task_vars, play_context)
            return
        # What _queue_task and a worker would do, less the worker: the cache entry the result processing
        # looks the task up in, the start callback, then the result through the same queue.
        self._queued_task_cache[(host.name, task._uuid)] = {
            "host": host,
            "task": task,
            "task_vars": task_vars,
            "play_context": play_context,
        }
        self._tqm.send_callback("v2_runner_on_start", host, task)
        self._final_q.send_task_result(
            _RawTaskResult(host=host, task=task, return_data=result, task_fields=task.dump_attrs())
        )
        self._pending_results += 1

    def _skipped_result(self, task: Any, task_vars: dict[str, Any]) -> dict[str, Any] | None:
        """The worker's skipped result where the task's `when` is false; None where a worker must judge."""
        if not task.when or not _judged_here(task) or task.action in constants._ACTION_META:
            return None
        conditions = task.when if isinstance(task.when, list) else [task.when]
        if any(isinstance(c, str) and any(name in c for name in _CONNECTION_VARIABLES) for c in conditions):
            return None
        context: dict[str, Any] = {}
        try:
            if task._resolve_conditional(conditions, task_vars.copy(), result_context=context):
                return None
            result = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
            result.update(context)
            task.update_result_no_log(TemplateEngine(loader=self._loader, variables=task_vars), result)
        except Exception:  # the worker evaluates it again and reports the error as usual
            return None
        return result

    def _validated_arguments_result(self, task: Any, task_vars: dict[str, Any]) -> dict[str, Any] | None:
        """validate_argument_spec's result where the arguments pass; None where a worker must run it."""
        if task.action not in _VALIDATE_ARGUMENT_SPEC or task.when or not _judged_here(task):
            return None
        try:
            templar = TemplateEngine(loader=self._loader, variables=task_vars)
            args = templar.template(task.args)
            spec = args["argument_spec"]
            from_vars = templar.template({name: task_vars[name] for name in spec if name in task_vars})
            provided = combine_vars(from_vars, args.get("provided_arguments") or {})
            validation = ArgumentSpecValidator(spec).validate(provided, validate_role_argument_spec=True)
            if validation.error_messages:
                return None  # the worker reports the failure, worded as always
            result = {
                "changed": False,
                "failed": False,
                "msg": "The arg spec validation passed",
                "validate_args_context": args.get("validate_args_context", {}),
            }
            task.update_result_no_log(templar, result)
        except Exception:  # the worker runs it again and reports the error as usual
            return None
        return result
