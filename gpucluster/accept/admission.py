"""What acceptance does to a node in Slurm: resume only its own drains, never an operator's.

A new rack node registers drained with ACCEPTANCE_PREFIX (role slurm_node), so it takes no job before
its hardware checks pass. A node drained for any other reason ("bad DIMM") keeps its drain and reason
whatever the checks say: the report tells the operator, Slurm keeps their note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

ACCEPTANCE_PREFIX: Final = "gpucluster accept:"
AWAITING_REASON: Final = f"{ACCEPTANCE_PREFIX} awaiting acceptance (ansible/playbooks/accept.yml)"
# sinfo's long state (%T) of a drained node, with or without jobs still running.
_DRAINED: Final = ("drained", "draining", "drain")

Action = Literal["resume", "drain", "keep", "none"]


@dataclass(frozen=True)
class Admission:
    """The action on the node and why (the playbook runs the action; the report keeps the why)."""

    action: Action
    why: str
    reason: str | None = None  # the Slurm Reason to drain with


def admission(passed: bool, drain_reason: str | None, state: str, reason: str) -> Admission:
    """Decide from the verdict and the node's Slurm state and Reason (sinfo %T and %E)."""
    drained = state.lower().rstrip("*~#%!@$^-") in _DRAINED
    ours = reason.startswith(ACCEPTANCE_PREFIX)
    if drained and not ours:
        verdict = "passed" if passed else "failed"
        return Admission("keep", f"{verdict}; stays drained for its operator's reason: {reason}")
    if not passed:
        return Admission("drain", "failed: drained", f"{ACCEPTANCE_PREFIX} {drain_reason or 'failed'}")
    if drained:
        return Admission("resume", "passed: its acceptance drain is lifted")
    return Admission("none", "passed: already in service")
