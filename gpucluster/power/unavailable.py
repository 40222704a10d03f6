"""Groups that recently had no capacity: skipped until their time is up, so jobs go where capacity is."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


class Unavailable:
    """A small JSON file of group → epoch second until which the group is not tried.

    The key is a group's name, or in a group of mixed GPU models one model's name prefix, so a capacity
    error on one model leaves the other's names open (gpucluster.power.resume).
    """

    def __init__(self, state_dir: str) -> None:
        self.path = Path(state_dir) / "unavailable.json"

    def _read(self) -> dict[str, float]:
        try:
            data: dict[str, float] = json.loads(self.path.read_text())
            return data
        except (FileNotFoundError, ValueError):
            return {}

    def until(self, group: str, now: float) -> float | None:
        """Until when group is unavailable, or None when it may be tried."""
        until = self._read().get(group)
        return until if until is not None and until > now else None

    def mark(self, group: str, until: float) -> None:
        """Record group as unavailable until the given epoch second (written atomically)."""
        data = self._read()
        data[group] = until
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".unavailable-")
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(temporary, self.path)
