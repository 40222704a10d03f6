"""Slurm hostlists as slurmctld hands them to power programs: `p5-spot-[1-3,7],p5-od-2`."""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def _top_level(hostlist: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(hostlist):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(hostlist[start:index])
            start = index + 1
    parts.append(hostlist[start:])
    return [part for part in (p.strip() for p in parts) if part]


def _numbers(spec: str) -> list[str]:
    """`1-3,07` → 1, 2, 3, 07 (zero padding kept as written)."""
    out: list[str] = []
    for item in spec.split(","):
        lo, _, hi = item.partition("-")
        if not hi:
            out.append(lo)
            continue
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise ValueError(f"bad range [{spec}]")
        width = len(lo) if lo.startswith("0") else 0
        out += [f"{n:0{width}d}" for n in range(int(lo), int(hi) + 1)]
    return out


def expand(hostlist: str) -> list[str]:
    """Every name of a hostlist, in order (what `scontrol show hostnames` prints)."""
    names: list[str] = []
    for part in _top_level(hostlist):
        match = _BRACKET.search(part)
        if match is None:
            names.append(part)
            continue
        head, tail = part[: match.start()], part[match.end() :]
        for number in _numbers(match[1]):
            names += expand(f"{head}{number}{tail}")
    return names
