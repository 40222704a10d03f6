"""When the ResumeProgram last took each node, so a booting node is judged by this power-up's instances.

The reconciler must never take a node DOWN for the ended instance of an earlier power-up. slurmctld
marks a node POWERING_UP when it allocates it, a moment before its ResumeProgram runs and marks it here:
in that window the node's last resume mark is its previous power-up's. So the SuspendProgram (also the
ResumeFailProgram) marks the power-down too, and a node powered down after its last resume has no
instance of its current power-up yet (seen on the test rack: a node allocated 0.9 s before its
ResumeProgram ran went DOWN for the instance of the power-up before, requeuing its job a second time).

One empty file per node and kind under the state directory; its mtime is the mark. Concurrent programs
touch different files, so no write can lose another's (a shared JSON file could).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

MARKS_DIR = "resumed"
SUSPENDED_DIR = "suspended"


def _touch(directory: Path, nodes: list[str], now: float) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for node in nodes:
            marker = directory / node
            marker.touch()
            os.utime(marker, (now, now))
    except OSError:
        pass  # without a mark the reconciler only waits: ResumeTimeout still catches a failed boot


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def of_power_up(launched: float, since: float, slack_s: float) -> bool:
    """Whether an instance launched at `launched` belongs to the power-up that began at `since`.

    slack_s: EC2's LaunchTime and the controller's clock may differ a little.
    """
    return launched >= since - slack_s


class ResumeMarks:
    """Per-node epoch seconds at which the ResumeProgram began to launch it, and the last power-down."""

    def __init__(self, state_dir: str) -> None:
        self.path = Path(state_dir) / MARKS_DIR
        self.suspended = Path(state_dir) / SUSPENDED_DIR

    def mark(self, nodes: list[str], now: float) -> None:
        """Record that nodes are being resumed now; a mark that cannot be written is skipped."""
        _touch(self.path, nodes, now)

    def mark_suspended(self, nodes: list[str], now: float) -> None:
        """Record that nodes are being powered down now (their power-up is over)."""
        _touch(self.suspended, nodes, now)

    def since(self, node: str) -> float | None:
        """When node's current power-up began; infinity when powered down since; None without a mark.

        Infinity: the node was powered down after its last resume, so no instance is its current
        power-up's yet.
        """
        resumed = _mtime(self.path / node)
        if resumed is None:
            return None
        suspended = _mtime(self.suspended / node)
        return math.inf if suspended is not None and suspended > resumed else resumed
