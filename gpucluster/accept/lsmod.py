"""Parse `lsmod`: which kernel modules are loaded."""

from __future__ import annotations

from gpucluster.accept.errors import ParseError


def parse_lsmod(text: str) -> frozenset[str]:
    """Names of the loaded modules; raise ParseError unless the `Module  Size  Used by` header leads."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or lines[0].split()[:2] != ["Module", "Size"]:
        raise ParseError("expected `lsmod` output starting with the `Module Size Used by` header")
    names: set[str] = set()
    for line in lines[1:]:
        fields = line.split()
        if len(fields) < 3 or not fields[1].isdigit():
            raise ParseError(f"unexpected line in `lsmod` output: {line[:80]!r}")
        names.add(fields[0])
    return frozenset(names)
