r"""The Prometheus text exposition format (version 0.0.4), as dcgm-exporter serves it on :9400/metrics.

Only what exporters write is read: `# HELP` and `# TYPE` lines, other comments, and samples
`name{label="value",...} value [timestamp_ms]`, label values escaped with \\\\, \\" and \\n.
https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpucluster.utilization.series import Series

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*\"")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class ExpositionError(ValueError):
    """Exposition text that cannot be read; names the source and the line."""


@dataclass(frozen=True)
class Sample:
    """One sample line: metric name, labels, value and the optional timestamp in milliseconds."""

    name: str
    labels: dict[str, str]
    value: float
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class Exposition:
    """A scraped page: its samples in order, and each metric family's TYPE and HELP."""

    samples: list[Sample]
    types: dict[str, str]
    help: dict[str, str]

    def of(self, name: str) -> list[Sample]:
        """The samples of one metric."""
        return [s for s in self.samples if s.name == name]


def parse_exposition(text: str, source: str = "<metrics>") -> Exposition:
    """Samples, types and help texts of an exposition page; a malformed line is an ExpositionError."""
    samples: list[Sample] = []
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            words = line[1:].split(None, 2)
            if len(words) >= 2 and words[0] in ("HELP", "TYPE"):
                (types if words[0] == "TYPE" else helps)[words[1]] = words[2] if len(words) > 2 else ""
            continue
        try:
            samples.append(_sample(line))
        except ValueError as exc:
            raise ExpositionError(
                f'{source}:{number}: {exc}; expected name{{label="value",...}} value'
            ) from None
    return Exposition(samples, types, helps)


def _sample(line: str) -> Sample:
    name_match = _NAME.match(line)
    if name_match is None:
        raise ValueError(f"no metric name at {line[:40]!r}")
    name, rest = name_match.group(0), line[name_match.end() :]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        labels, rest = _labels(rest[1:])
    words = rest.split()
    if len(words) not in (1, 2):
        raise ValueError(f"{name}: expected a value and an optional timestamp, found {rest.strip()!r}")
    value = float(words[0])  # float() reads NaN, +Inf and -Inf as the format writes them
    timestamp = int(words[1]) if len(words) == 2 else None
    return Sample(name, labels, value, timestamp)


def _labels(text: str) -> tuple[dict[str, str], str]:
    """Labels up to the closing brace, and the text after it."""
    labels: dict[str, str] = {}
    position = 0
    while True:
        stripped = text[position:].lstrip()
        position = len(text) - len(stripped)
        if stripped.startswith("}"):
            return labels, text[position + 1 :]
        match = _LABEL.match(text, position)
        if match is None:
            raise ValueError(f"bad label at {text[position : position + 30]!r}")
        value, position = _quoted(text, match.end())
        labels[match.group(1)] = value
        stripped = text[position:].lstrip()
        position = len(text) - len(stripped)
        if stripped.startswith(","):
            position += 1
        elif not stripped.startswith("}"):
            raise ValueError(f"expected , or }} after label {match.group(1)}")


def _quoted(text: str, position: int) -> tuple[str, int]:
    """An escaped label value starting after its opening quote, and the position after its closing one."""
    out: list[str] = []
    while position < len(text):
        char = text[position]
        if char == '"':
            return "".join(out), position + 1
        if char == "\\" and position + 1 < len(text):
            position += 1
            out.append(_ESCAPES.get(text[position], "\\" + text[position]))
        else:
            out.append(char)
        position += 1
    raise ValueError("unterminated label value")


def as_series(page: Exposition, name: str, at_s: float, labels: dict[str, str]) -> list[Series]:
    """One scrape of a metric as one-point series at at_s, with the target labels Prometheus would add."""
    return [
        Series({**s.labels, **labels}, ((at_s, s.value),)) for s in page.of(name) if math.isfinite(s.value)
    ]
