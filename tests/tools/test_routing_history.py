"""The shipped sacct month is what the generator writes, and its rack never runs more nodes than it has."""

from __future__ import annotations

from gpucluster.routing.history import parse_history
from tools.routing_history import SAMPLE, generate


def test_the_shipped_month_is_current() -> None:
    assert SAMPLE.read_text() == generate(900, 30.0, 8), "run `python -m tools.routing_history`"


def test_the_rack_never_holds_more_than_its_nodes() -> None:
    jobs = parse_history(generate(300, 5.0, 4, seed=7))
    assert len(jobs) == 300 and all(j.start >= j.submit for j in jobs)
    events = sorted(
        [(j.start, j.nodes) for j in jobs] + [(j.end, -j.nodes) for j in jobs], key=lambda e: (e[0], e[1])
    )
    busy, peak = 0, 0
    for _, change in events:
        busy += change
        peak = max(peak, busy)
    assert peak == 4  # full at times, never over
