"""Impact kinds, most severe first, and the finding every classifier returns."""

from __future__ import annotations

from dataclasses import dataclass, field

# Most severe first; the summary table is sorted by this order.
KINDS: tuple[str, ...] = (
    "data-loss",
    "replace",
    "slurmctld-restart",
    "reconfigure",
    "slurmd-restart",
    "reboot",
    "security",
    "in-place",
)
LABELS = {
    "data-loss": "data-loss risk",
    "replace": "instance replacement / capacity change",
    "slurmctld-restart": "Slurm controller restart",
    "reconfigure": "scontrol reconfigure",
    "slurmd-restart": "slurmd restart (drain needed)",
    "reboot": "driver/kernel change (rolling reboot)",
    "security": "security delta",
    "in-place": "in place",
}
# What --fail-on accepts, and the kinds each name covers.
FAIL_ON = {"data-loss": ("data-loss",), "replace": ("replace",), "security": ("security",)}


@dataclass(frozen=True)
class Finding:
    """One consequence of the change: its kind, a one-line title and supporting detail lines."""

    kind: str
    title: str
    detail: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)

    def rank(self) -> int:
        """Position in KINDS: 0 is the most severe."""
        return KINDS.index(self.kind)


def ordered(findings: list[Finding]) -> list[Finding]:
    """Findings most severe first, stable within a kind."""
    return sorted(findings, key=Finding.rank)
