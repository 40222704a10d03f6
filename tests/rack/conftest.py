"""Fixtures for end-to-end tests on a test rack booted on this machine."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucluster_rack.rack import Rack, down

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
