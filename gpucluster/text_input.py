"""Text a command reads from a file named on its command line, or stdin for `-` (sacct, squeue output)."""

from __future__ import annotations

import sys
from pathlib import Path


class UnreadableInputError(ValueError):
    """A file named on the command line that cannot be read as UTF-8 text (exit 2, not a traceback)."""


def read_text(path: str) -> str:
    """The file's text, or stdin's for `-`; UnreadableInputError names the file and why."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableInputError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
