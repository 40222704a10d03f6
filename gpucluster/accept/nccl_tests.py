"""Parse nccl-tests `*_perf` output: result rows and the reported average bus bandwidth.

Rows end in two groups (out-of-place, in-place) of `time algbw busbw #wrong`; the leading columns
(size count type redop root) vary by test and version, so only the size and the last eight fields
are read. `#wrong` is `N/A` when the run did not check data (-c 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster.accept.errors import ParseError

GIB_BYTES = 1024**3
_AVG = re.compile(r"^# Avg bus bandwidth\s*:\s*([0-9.]+)")


@dataclass(frozen=True)
class NcclRow:
    """One message size: out-of-place and in-place time (µs) and bandwidths (GB/s)."""

    size_bytes: int
    oop_time_us: float
    oop_algbw_gbs: float
    oop_busbw_gbs: float
    ip_time_us: float
    ip_algbw_gbs: float
    ip_busbw_gbs: float
    wrong: int  # data errors over both runs; 0 when not checked

    @property
    def busbw_gbs(self) -> float:
        """The better bus bandwidth of the two runs."""
        return max(self.oop_busbw_gbs, self.ip_busbw_gbs)


@dataclass(frozen=True)
class NcclResult:
    """All rows of one run and its `# Avg bus bandwidth` line."""

    rows: tuple[NcclRow, ...]
    avg_busbw_gbs: float | None

    def peak_busbw_gbs(self, min_size_bytes: int = GIB_BYTES) -> float | None:
        """Highest bus bandwidth over sizes ≥ `min_size_bytes`, or None when no row is that large."""
        large = [r.busbw_gbs for r in self.rows if r.size_bytes >= min_size_bytes]
        return max(large) if large else None

    @property
    def wrong(self) -> int:
        """Data errors over all rows."""
        return sum(r.wrong for r in self.rows)


def _wrong(text: str) -> int:
    if text == "N/A":
        return 0
    return int(float(text)) if float(text) > 0 else 0


def _row(fields: list[str]) -> NcclRow:
    try:
        t1, a1, b1, w1, t2, a2, b2, w2 = fields[-8:]
        return NcclRow(
            int(fields[0]),
            float(t1),
            float(a1),
            float(b1),
            float(t2),
            float(a2),
            float(b2),
            _wrong(w1) + _wrong(w2),
        )
    except ValueError:
        raise ParseError(f"unexpected result row in nccl-tests output: {' '.join(fields)[:80]!r}") from None


def parse_nccl_tests(text: str) -> NcclResult:
    """Parse `all_reduce_perf` (or any nccl-tests) stdout; raise ParseError when it has no results."""
    rows: list[NcclRow] = []
    avg: float | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if match := _AVG.match(line):
            avg = float(match.group(1))
        elif line and line[0].isdigit():
            fields = line.split()
            if len(fields) >= 12:
                rows.append(_row(fields))
    if not rows:
        raise ParseError("no result rows in nccl-tests output (expected lines of size count type … busbw)")
    return NcclResult(tuple(rows), avg)
