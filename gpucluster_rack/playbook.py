"""Ansible runs against a rack: `converge` runs a playbook from inside the rack's network."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster_rack import ROOT
from gpucluster_rack.rack import Rack


@dataclass
class Playbook:
    """The outcome of one ansible-playbook run."""

    rc: int
    output: str

    def recap(self) -> dict[str, dict[str, int]]:
        """PLAY RECAP counters per host (summed over plays)."""
        totals: dict[str, dict[str, int]] = {}
        for host, counters in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.output, re.M):
            host_totals = totals.setdefault(host, {})
            for key, value in re.findall(r"(\w+)=(\d+)", counters):
                host_totals[key] = host_totals.get(key, 0) + int(value)
        return totals


def converge(
    rack: Rack, *extra: str, env: dict[str, str] | None = None, playbook: str = "ansible/site.yml"
) -> Playbook:
    """Run a playbook (site.yml by default) against the rack's cluster file from inside its network."""
    rc, output = rack.in_bridge(
        [
            str(ROOT / ".venv/bin/ansible-playbook"),
            "-i",
            str(rack.cluster_file),
            str(ROOT / playbook),
            *extra,
        ],
        env={**rack.ansible_env(), "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), **(env or {})},
    )
    return Playbook(rc, output)
