"""`gpucluster health`: every node's last health pass, its drain reason and who set it, from slurmctld.

The node program (node_program.py) keeps its last periodic or failed pass in the node's Slurm Comment
(`gpucluster-health <when> <UTC time> ok|CODES [action]`) and its drains in the node's Reason, so the
controller alone can say where each node stands; every pass is also a JSON line in the node's own log.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from gpucluster import names
from gpucluster.health.node_program import COMMENT_PREFIX, parse_node


@dataclass(frozen=True)
class NodeHealth:
    """One node: Slurm's state, its last health pass, and its drain reason with who set it."""

    node: str
    state: str
    last_pass: str  # "<when> <time> ok|CODES [action]", "" where no pass has reported
    drained_by: str  # "health", "operator" or ""
    reason: str


def _drained_by(flags: frozenset[str], reason: str) -> str:
    if not flags & {"DRAIN", "DRAINED", "DRAINING"}:
        return ""
    return "health" if reason.startswith(names.HEALTH_REASON) else "operator"


def parse_nodes(text: str) -> list[NodeHealth]:
    """The nodes of `scontrol show node -o` output (one line per node), in its order."""
    found = []
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        node = parse_node(line)
        comment = node.comment.removeprefix(COMMENT_PREFIX) if node.comment.startswith(COMMENT_PREFIX) else ""
        state = line.split(" State=", 1)[1].split(" ", 1)[0] if " State=" in line else ""
        found.append(
            NodeHealth(
                line.split()[0].removeprefix("NodeName="),
                state,
                comment,
                _drained_by(node.states, node.reason),
                node.reason,
            )
        )
    return found


def as_text(nodes: list[NodeHealth]) -> str:
    """A table: node, state, last pass, who drained it and why."""
    rows = [("NODE", "STATE", "LAST PASS", "DRAINED BY", "REASON")]
    rows += [(n.node, n.state, n.last_pass or "-", n.drained_by or "-", n.reason or "-") for n in nodes]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    )


def as_json(nodes: list[NodeHealth]) -> str:
    """The nodes as a JSON list."""
    return json.dumps([asdict(n) for n in nodes], indent=2)
