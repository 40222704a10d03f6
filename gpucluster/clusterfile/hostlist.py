"""Slurm hostlist patterns: `gpu-a[01-04]` ⇄ gpu-a01 … gpu-a04."""

from __future__ import annotations

import re
from collections import defaultdict

_RANGE = re.compile(r"^(?P<pre>[^\[\]]*)\[(?P<lo>[0-9]+)-(?P<hi>[0-9]+)\](?P<post>[^\[\]]*)$")
_NUMBERED = re.compile(r"^(?P<pre>.*?)(?P<num>[0-9]+)$")


def expand(pattern: str) -> list[str]:
    """Expand one bracketed numeric range; a plain name expands to itself.

    Raises ValueError when the range runs backwards.
    """
    match = _RANGE.match(pattern)
    if not match:
        return [pattern]
    lo, hi = match["lo"], match["hi"]
    if int(hi) < int(lo):
        raise ValueError(f"range [{lo}-{hi}] runs backwards")
    width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
    return [f"{match['pre']}{n:0{width}d}{match['post']}" for n in range(int(lo), int(hi) + 1)]


def compress(names: list[str]) -> str:
    """Shortest comma-joined hostlist for names (consecutive numbers of equal width become ranges)."""
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    order: list[tuple[str, int]] = []
    plain: list[str] = []
    for name in names:
        match = _NUMBERED.match(name)
        if not match:
            plain.append(name)
            continue
        key = (match["pre"], len(match["num"]))
        if key not in groups:
            order.append(key)
        groups[key].append(int(match["num"]))
    parts = [_ranges(prefix, width, groups[(prefix, width)]) for prefix, width in order]
    return ",".join(parts + plain)


def _ranges(prefix: str, width: int, numbers: list[int]) -> str:
    numbers = sorted(set(numbers))
    spans: list[str] = []
    start = prev = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == prev + 1:
            prev = number
            continue
        spans.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if number is not None:
            start = prev = number
    if len(spans) == 1 and "-" not in spans[0]:
        return f"{prefix}{spans[0]}"
    return f"{prefix}[{','.join(spans)}]"
