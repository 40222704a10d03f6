"""Problems found in a cluster file, and how they are shown to the person who wrote it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Path = tuple[str | int, ...]
Level = Literal["error", "warning"]


def dotted(path: Path) -> str:
    """Render a field path the way users write it: `aws.capacity[1].max_count`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(document)"


@dataclass(frozen=True)
class Finding:
    """One problem at one field path, with a hint that says what to change."""

    path: Path
    message: str
    hint: str
    level: Level = "error"
    file: str = ""
    line: int = 0

    def located(self, file: str, line: int) -> Finding:
        """The same finding, placed in a file at a line."""
        return Finding(self.path, self.message, self.hint, self.level, file, line)

    def __str__(self) -> str:
        prefix = f"{self.file}:{self.line}: " if self.file else ""
        tag = "warning: " if self.level == "warning" else ""
        return f"{prefix}{tag}{dotted(self.path)}: {self.message}; {self.hint}"


@dataclass
class ClusterFileError(Exception):
    """A cluster file that cannot be used; carries every error found, each with its place."""

    findings: list[Finding] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(f) for f in self.findings)
