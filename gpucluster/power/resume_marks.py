"""When the ResumeProgram last took each node, so a booting node is judged by this power-up's instances.

The reconciler must never take a node DOWN for the ended instance of an earlier power-up.

One empty file per node under the state directory; its mtime is the mark. Concurrent ResumePrograms
touch different files, so no write can lose another's (a shared JSON file could).
"""

from __future__ import annotations

import os
from pathlib import Path

MARKS_DIR = "resumed"


class ResumeMarks:
    """Per-node epoch seconds at which the ResumeProgram began to launch it."""

    def __init__(self, state_dir: str) -> None:
        self.path = Path(state_dir) / MARKS_DIR

    def mark(self, nodes: list[str], now: float) -> None:
        """Record that nodes are being resumed now; a mark that cannot be written is skipped."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            for node in nodes:
                marker = self.path / node
                marker.touch()
                os.utime(marker, (now, now))
        except OSError:
            pass  # without a mark the reconciler only waits: ResumeTimeout still catches a failed boot

    def since(self, node: str) -> float | None:
        """When node was last resumed, or None when no mark is known."""
        try:
            return (self.path / node).stat().st_mtime
        except OSError:
            return None
