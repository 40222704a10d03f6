"""What the power programs ask and tell slurmctld, through scontrol (the one Slurm client they use)."""

from __future__ import annotations

import calendar
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Protocol

from gpucluster.clusterfile.hostlist import compress

_FIELD = re.compile(r"(\w+)=")
_REASON_STAMP = re.compile(r"\s*\[[^@\]]*@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]\s*$")


@dataclass(frozen=True)
class NodeState:
    """A node as `scontrol show nodes` reports it: base state, flags, address and reason."""

    name: str
    state: str  # base state: IDLE, ALLOCATED, MIXED, DOWN, …
    flags: frozenset[str]  # CLOUD, POWERED_DOWN, POWERING_UP, POWERING_DOWN, DRAIN, NOT_RESPONDING, …
    address: str = ""
    reason: str = ""
    reason_time: float | None = None  # epoch seconds the reason was set

    @property
    def powered_down(self) -> bool:
        """Off: no instance should exist (powering up is not off)."""
        return "POWERED_DOWN" in self.flags and "POWERING_UP" not in self.flags

    @property
    def powering_up(self) -> bool:
        """Resumed and not yet registered."""
        return "POWERING_UP" in self.flags

    @property
    def powering_down(self) -> bool:
        """Being suspended (SuspendProgram called, SuspendTimeout not over)."""
        return "POWERING_DOWN" in self.flags

    @property
    def down(self) -> bool:
        """DOWN: its jobs were requeued, no job runs on it."""
        return self.state == "DOWN"

    @property
    def up(self) -> bool:
        """Registered and in service (idle, allocated, drained …): it must have an instance."""
        return not (self.down or self.powered_down or self.powering_up or self.powering_down)


def parse_nodes(text: str) -> dict[str, NodeState]:
    """Nodes from `scontrol show nodes --oneliner` output (one node per line)."""
    nodes: dict[str, NodeState] = {}
    for line in text.splitlines():
        fields = _fields(line)
        if "NodeName" not in fields:
            continue
        state, *flags = fields.get("State", "UNKNOWN").split("+")
        reason = fields.get("Reason", "")
        stamp = _REASON_STAMP.search(reason)
        when = calendar.timegm(time.strptime(stamp.group(1), "%Y-%m-%dT%H:%M:%S")) if stamp else None
        nodes[fields["NodeName"]] = NodeState(
            name=fields["NodeName"],
            state=state.rstrip("*~#%!@$^-"),
            flags=frozenset(flags),
            address=fields.get("NodeAddr", ""),
            reason=_REASON_STAMP.sub("", reason) if stamp else reason,
            reason_time=when,
        )
    return nodes


def _fields(line: str) -> dict[str, str]:
    """Key=value pairs of one line; Reason (free text, last but its stamp) runs to its end."""
    out: dict[str, str] = {}
    matches = list(_FIELD.finditer(line))
    for index, match in enumerate(matches):
        key = match.group(1)
        if key == "Reason":
            out[key] = line[match.end() :].strip()
            break
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        out[key] = line[match.end() : end].strip()
    return out


class Slurm(Protocol):
    """The Slurm operations the power programs need."""

    def set_down(self, nodes: list[str], reason: str) -> None:
        """Mark nodes DOWN with a reason (their jobs requeue)."""

    def power_down(self, nodes: list[str]) -> None:
        """Return DOWN cloud nodes to POWERED_DOWN (idle, ready to be resumed)."""

    def power_up(self, nodes: list[str]) -> None:
        """Resume powered-down nodes with no job (static nodes)."""

    def nodes(self) -> dict[str, NodeState]:
        """Every node's state."""

    def drain(self, nodes: list[str], reason: str) -> None:
        """No new job starts on the nodes; running jobs go on."""

    def resume(self, nodes: list[str]) -> None:
        """Clear the nodes' drain (a powered-down node stays powered down)."""

    def signal_jobs(self, node: str, signal: str) -> None:
        """Send a signal to the batch shell and steps of every job on a node."""


class Scontrol:
    """Slurm through the scontrol command (and scancel, for signals) on slurmctld's PATH."""

    def __init__(self, binary: str = "scontrol", scancel: str = "scancel") -> None:
        self.binary = binary
        self.scancel = scancel

    def _run(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], check=True, capture_output=True, text=True)
        return done.stdout

    def set_down(self, nodes: list[str], reason: str) -> None:
        """Run `scontrol update nodename=<hostlist> state=down reason=<reason>`."""
        if nodes:
            self._run("update", f"nodename={compress(nodes)}", "state=down", f"reason={reason}")

    def power_down(self, nodes: list[str]) -> None:
        """`state=power_down_force`: a DOWN cloud node becomes IDLE+POWERED_DOWN after SuspendTimeout.

        No reason: an idle node keeps no note of its DOWN spell (the reconciler's log has it).
        """
        if nodes:
            self._run("update", f"nodename={compress(nodes)}", "state=power_down_force")

    def power_up(self, nodes: list[str]) -> None:
        """`state=power_up`: slurmctld runs the ResumeProgram for them."""
        if nodes:
            self._run("update", f"nodename={compress(nodes)}", "state=power_up")

    def nodes(self) -> dict[str, NodeState]:
        """`scontrol show nodes --oneliner` (before 23.02 powered-down nodes need PrivateData=cloud)."""
        return parse_nodes(self._run("show", "nodes", "--oneliner"))

    def drain(self, nodes: list[str], reason: str) -> None:
        """Run `scontrol update nodename=<hostlist> state=drain reason=<reason>`."""
        if nodes:
            self._run("update", f"nodename={compress(nodes)}", "state=drain", f"reason={reason}")

    def resume(self, nodes: list[str]) -> None:
        """Run `scontrol update nodename=<hostlist> state=resume`."""
        if nodes:
            self._run("update", f"nodename={compress(nodes)}", "state=resume")

    def signal_jobs(self, node: str, signal: str) -> None:
        """`scancel --full --signal=<signal> --nodelist=<node>`: --full reaches the batch shell too."""
        subprocess.run(
            [self.scancel, "--full", f"--signal={signal}", f"--nodelist={node}"],
            check=True,
            capture_output=True,
            text=True,
        )
