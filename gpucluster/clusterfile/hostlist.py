"""Slurm hostlists, the project's only reader and writer of them: `gpu-c[01,03],p5-od-[1-4]` ⇄ names.

The grammar is Slurm's (src/common/hostlist.c, `scontrol show hostnames`): names separated by commas or
whitespace outside brackets; in a name, bracket groups of comma-separated numbers and `lo-hi` ranges,
each zero padded to the width of its written lower bound (`[08-10]` → 08 09 10, `[9-10]` → 9 10).
Several groups multiply out in Slurm's order (see _loop_order). Text after the last bracket
(`gpu[1-2]-ib`) is read as Slurm 23.11 and later read it; compress() never writes it, so every Slurm
version reads what it writes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from itertools import product
from typing import Final

MAX_RANGE: Final = 64 * 1024  # Slurm's own bound on one range: anything larger is a typo
MAX_NAMES: Final = 1024 * 1024  # several groups multiply; refuse before they exhaust memory
SEPARATORS: Final = frozenset(", \t\n")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_NUMBER = re.compile(r"[0-9]+")
_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<digits>[0-9]+)$")
_NOT_IN_A_NAME = re.compile(r"[\[\],\s]")


def expand(hostlist: str) -> list[str]:
    """Every name of a hostlist, in Slurm's order, duplicates kept (as `scontrol show hostnames`).

    Raises ValueError, naming the hostlist and what to change, for unbalanced or nested brackets,
    empty brackets, items that are not numbers or `lo-hi` ranges, and backwards or oversized ranges.
    """
    names: list[str] = []
    for token in _tokens(hostlist):
        names += _expand_token(token, hostlist)
        if len(names) > MAX_NAMES:
            raise ValueError(f"hostlist {hostlist!r}: more than {MAX_NAMES} names")
    return names


def _tokens(hostlist: str) -> Iterator[str]:
    """The names of a hostlist: split at separators outside brackets; brackets must pair, unnested."""
    start, opened = 0, -1
    for index, char in enumerate(hostlist):
        if char == "[":
            if opened >= 0:
                raise ValueError(
                    f"hostlist {hostlist!r}: '[' at offset {index} inside brackets; brackets do not nest"
                )
            opened = index
        elif char == "]":
            if opened < 0:
                raise ValueError(f"hostlist {hostlist!r}: ']' at offset {index} closes no '['")
            opened = -1
        elif char in SEPARATORS and opened < 0:
            if index > start:
                yield hostlist[start:index]
            start = index + 1
    if opened >= 0:
        raise ValueError(f"hostlist {hostlist!r}: '[' at offset {opened} is never closed; add ']'")
    if start < len(hostlist):
        yield hostlist[start:]


def _expand_token(token: str, hostlist: str) -> list[str]:
    """The names of one token; its literal text and bracket groups alternate."""
    parts = _GROUP.split(token)
    literals, groups = parts[0::2], [_numbers(spec, hostlist) for spec in parts[1::2]]
    if not groups:
        return [token]
    if math.prod(len(g) for g in groups) > MAX_NAMES:
        raise ValueError(f"hostlist {hostlist!r}: {token!r} names more than {MAX_NAMES} hosts")
    order = _loop_order(len(groups))
    names: list[str] = []
    for values in product(*(groups[i] for i in order)):
        by_group = dict(zip(order, values, strict=True))
        names.append(literals[0] + "".join(by_group[i] + literals[i + 1] for i in range(len(groups))))
    return names


def _loop_order(count: int) -> list[int]:
    """Bracket groups from the outermost loop to the innermost, as Slurm nests them.

    Slurm runs the last group fastest, then loops over the groups before it from right to left (the
    one next to the last outermost): r[1-2]n[1-2] is r1n1 r1n2 r2n1 r2n2, and in a[1-2]b[1-2]c[1-2]
    b changes slowest. The rack test checks this order against `scontrol show hostnames`.
    """
    return [*range(count - 2, -1, -1), count - 1]


def _numbers(spec: str, hostlist: str) -> list[str]:
    """`1,03-05` → 1 03 04 05: each range padded to the width of its written lower bound."""
    if not spec:
        raise ValueError(f"hostlist {hostlist!r}: empty brackets []; write numbers or ranges inside")
    numbers: list[str] = []
    for item in spec.split(","):
        low, dash, high = item.partition("-")
        if not _NUMBER.fullmatch(low) or (dash and not _NUMBER.fullmatch(high)):
            raise ValueError(
                f"hostlist {hostlist!r}: {item!r} in [{spec}] is not a number or a range; "
                "write digits, like 7 or 01-04"
            )
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(
                f"hostlist {hostlist!r}: range {item} runs backwards; write the lower number first"
            )
        if last - first + 1 > MAX_RANGE:
            raise ValueError(f"hostlist {hostlist!r}: range {item} names more than {MAX_RANGE} hosts")
        numbers += [f"{n:0{len(low)}d}" for n in range(first, last + 1)]
        if len(numbers) > MAX_NAMES:
            raise ValueError(f"hostlist {hostlist!r}: [{spec}] names more than {MAX_NAMES} hosts")
    return numbers


def compress(names: Iterable[str]) -> str:
    """A hostlist that expand() turns back into the names, each once.

    Names sharing a prefix and a zero-padding width go in one bracket, numbers sorted and consecutive
    ones joined (`gpu-c01, gpu-c03` → `gpu-c[01,03]`); groups keep the order of their first name.
    Raises ValueError for a name that no hostlist can hold (empty, or with brackets, commas or spaces).
    """
    names = list(names)
    widths = _padded_widths(names)
    groups: dict[tuple[str, int], set[int]] = {}
    for name in names:
        if not name or _NOT_IN_A_NAME.search(name):
            raise ValueError(f"{name!r} cannot be a host name in a hostlist (empty, or has [ ] , or spaces)")
        key, number = _group_of(name, widths)
        found = groups.setdefault(key, set())
        if number is not None:
            found.add(number)
    return ",".join(_group_text(prefix, width, numbers) for (prefix, width), numbers in groups.items())


def _padded_widths(names: list[str]) -> dict[str, set[int]]:
    """The widths of the zero-padded numbers (`n007`: 3) at the end of names, by prefix."""
    widths: dict[str, set[int]] = {}
    for name in names:
        match = _NUMBERED.match(name)
        if match and _padded(match["digits"]):
            widths.setdefault(match["prefix"], set()).add(len(match["digits"]))
    return widths


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def _group_of(name: str, widths: dict[str, set[int]]) -> tuple[tuple[str, int], int | None]:
    """(prefix, width) of the bracket a name joins, and its number (None: a name without one).

    A padded number fits only its own width; an unpadded one fits every width up to its length, and
    joins the widest padded group it fits (`n08`, `n10` → n[08,10]), else the unpadded group (width 1).
    """
    match = _NUMBERED.match(name)
    if match is None:
        return (name, 0), None
    prefix, digits = match["prefix"], match["digits"]
    if _padded(digits):
        return (prefix, len(digits)), int(digits)
    fitting = [w for w in widths.get(prefix, set()) if w <= len(digits)]
    return (prefix, max(fitting, default=1)), int(digits)


def _group_text(prefix: str, width: int, numbers: set[int]) -> str:
    """`prefix`, `prefix07` or `prefix[01-03,07]`."""
    if not numbers:
        return prefix
    spans = [
        f"{first:0{width}d}" if first == last else f"{first:0{width}d}-{last:0{width}d}"
        for first, last in _runs(sorted(numbers))
    ]
    if len(spans) == 1 and "-" not in spans[0]:
        return prefix + spans[0]
    return f"{prefix}[{','.join(spans)}]"


def _runs(numbers: list[int]) -> Iterator[tuple[int, int]]:
    """(first, last) of each run of consecutive numbers in a sorted list."""
    first = last = numbers[0]
    for number in numbers[1:]:
        if number != last + 1:
            yield first, last
            first = number
        last = number
    yield first, last
