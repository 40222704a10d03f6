"""Fixtures for end-to-end tests on a test rack booted on this machine."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.rack.rack import Rack, down

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("mmdebstrap", "systemd-nspawn", "socat", "ip", "ssh")


def _missing_prerequisites() -> list[str]:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not Path("/usr/sbin/apt-cacher-ng").exists():
        missing.append("apt-cacher-ng")
    if os.geteuid() != 0:
        missing.append("root")
    return missing


def require_rack_prerequisites() -> None:
    """Skip on a developer machine without them; in CI their absence is a failure."""
    missing = _missing_prerequisites()
    if missing and os.environ.get("CI"):
        pytest.fail(f"test rack prerequisites missing in CI: {', '.join(missing)} (run `make rack-deps`)")
    if missing:
        pytest.skip(f"test rack needs {', '.join(missing)}: run `make rack-deps` as root")


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


@pytest.fixture(scope="module")
def rack() -> Iterator[Rack]:
    """A 4-node rack (controller + 3 compute nodes with 8 declared GPUs each) and a spare node, n4."""
    require_rack_prerequisites()
    booted = Rack(name="t", size=5, declared=4)
    try:
        booted.up()
        yield booted
    finally:
        down(booted.name)
