"""Errors of the acceptance gate: tool output we cannot read, and input files we cannot use."""

from __future__ import annotations


class ParseError(ValueError):
    """A tool's output is not in the format its parser knows; the message says what was expected."""


class AcceptInputError(ValueError):
    """An input to the acceptance CLI (cluster file, host, observations, reports) cannot be used."""


def first_line(text: str, limit_chars: int = 120) -> str:
    """The first non-blank line of `text`; past `limit_chars`, its first sentence or a cut with '…'."""
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or len(line) <= limit_chars:
            if line:
                return line
            continue
        sentence_end = line.rfind(". ", 0, limit_chars)
        return line[: sentence_end + 1] if sentence_end > 0 else line[: limit_chars - 1] + "…"
    return ""
