"""What the power programs tell slurmctld, through scontrol (the one Slurm client they use)."""

from __future__ import annotations

import subprocess
from typing import Protocol

from gpucluster.clusterfile.hostlist import compress


class Slurm(Protocol):
    """The Slurm operations the power programs need."""

    def set_down(self, nodes: list[str], reason: str) -> None:
        """Mark nodes DOWN with a reason (their jobs requeue)."""


class Scontrol:
    """Slurm through the scontrol command on slurmctld's PATH."""

    def __init__(self, binary: str = "scontrol") -> None:
        self.binary = binary

    def set_down(self, nodes: list[str], reason: str) -> None:
        """Run `scontrol update nodename=<hostlist> state=down reason=<reason>`."""
        if nodes:
            subprocess.run(
                [self.binary, "update", f"nodename={compress(nodes)}", "state=down", f"reason={reason}"],
                check=True,
                capture_output=True,
                text=True,
            )
