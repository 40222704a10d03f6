"""Converge and idempotent re-run of test racks of 2, 4 and 8 nodes, in one run.

Prints a table and the re-run ratio 8-node/2-node (target ≤ 2.0), then the 8-node re-run with
Ansible's defaults (no pipelining, 5 forks, no fact cache) against the tuned ansible.cfg. A re-run is
the median of three, each checked to report changed=0 on every host (else it is not a re-run).
Needs root and `make rack-deps`; takes several minutes.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.rack.conftest import converge  # noqa: E402
from tests.rack.rack import Rack, down  # noqa: E402

UNTUNED = {
    "ANSIBLE_PIPELINING": "False",
    "ANSIBLE_FORKS": "5",
    "ANSIBLE_GATHERING": "implicit",
    "ANSIBLE_CACHE_PLUGIN": "memory",
}


def timed(rack: Rack, env: dict[str, str] | None = None, *, idempotent: bool = False) -> float:
    """Seconds of one site.yml run; raises if it failed (or, for a re-run, changed anything)."""
    start = time.perf_counter()
    run = converge(rack, env=env or {})
    seconds = time.perf_counter() - start
    if run.rc != 0:
        raise RuntimeError(run.output[-3000:])
    changed = {host: c["changed"] for host, c in run.recap().items() if c["changed"]}
    if idempotent and changed:
        raise RuntimeError(f"re-run changed {changed}:\n{run.output[-3000:]}")
    return seconds


def rerun(rack: Rack, env: dict[str, str] | None = None) -> float:
    """Median seconds of three idempotent re-runs."""
    return statistics.median(timed(rack, env, idempotent=True) for _ in range(3))


def main() -> None:
    """Boot, converge, re-run for each size; print the table and ratios."""
    rows: list[tuple[int, float, float]] = []
    untuned = 0.0
    for size in (2, 4, 8):
        rack = Rack(name="bench", size=size)
        try:
            rack.up()
            first = timed(rack)
            again = rerun(rack)
            if size == 8:
                untuned = timed(rack, UNTUNED, idempotent=True)
            rows.append((size, first, again))
            print(f"{size} nodes: converge {first:6.1f} s, re-run {again:6.1f} s", flush=True)
        finally:
            down(rack.name)
    print("\nnodes  converge_s  rerun_s")
    for size, first, again in rows:
        print(f"{size:5d}  {first:10.1f}  {again:7.1f}")
    ratio = rows[-1][2] / rows[0][2]
    print(f"re-run ratio 8-node/2-node: {ratio:.2f} (target ≤ 2.0: {'met' if ratio <= 2.0 else 'MISSED'})")
    print(
        f"8-node re-run with Ansible defaults: {untuned:.1f} s vs tuned {rows[-1][2]:.1f} s "
        f"({untuned / rows[-1][2]:.2f}x)"
    )


if __name__ == "__main__":
    main()
