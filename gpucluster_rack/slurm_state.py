"""What slurmctld says about rack nodes, and waiting for it: shared by the rack modules."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable

from gpucluster.health.node_program import parse_node
from gpucluster_rack.rack import Rack


def slurm_nodes(rack: Rack, *nodes: str) -> dict[str, tuple[str, str]]:
    """{node: (State, Reason)} as slurmctld has them (Reason without its [user@time] stamp)."""
    found = {}
    for line in rack.ssh("ctl", f"scontrol show node {','.join(nodes)} --oneliner").splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line.split(" Reason=")[0]))
        # The free-text fields (Reason, Comment, Extra) as the node health program reads them.
        found[fields["NodeName"]] = (fields["State"], parse_node(line).reason)
    return found


def wait_for(
    what: str, check: Callable[[], bool], timeout_s: float = 60, seen: Callable[[], object] | None = None
) -> None:
    """Poll check every second until it holds; fail naming what did not happen in time.

    The failure also names what `seen` returns then: the state last read.
    """
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out: {what}" + (f" (last seen: {seen()})" if seen else "")
        time.sleep(1)


def drained_nodes(rack: Rack) -> dict[str, str]:
    """{node: reason} for every node slurmctld holds drained, draining or down (a run must leave none)."""
    listed = rack.ssh("ctl", "sinfo -h -N -t drain,draining,down,fail -o '%N|%E'", check=False)
    rows = (line.split("|", 1) for line in listed.splitlines() if "|" in line)
    return {node.strip(): reason.strip() for node, reason in rows}


def report_left_drained(rack: Rack) -> bool:
    """Print each node left drained or down to stderr; True if there is one (a demo's run must leave none)."""
    drained = drained_nodes(rack)
    for node, reason in drained.items():
        print(f"FAIL: {node} is left drained or down: {reason}", file=sys.stderr)
    return bool(drained)
