"""Shared fixtures: the repository root and the shipped cluster files."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucluster.clusterfile import Cluster, load

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_FILES = sorted((ROOT / "clusters").glob("*.yaml"))


@pytest.fixture(scope="session")
def example() -> Cluster:
    return load(ROOT / "clusters" / "example.yaml").cluster


# CPU seconds by test module, printed after each pytest run. `make test` runs its chains side by side on two
# cores, so a chain's wall time says little about what it costs the machine: this does (issue 31's bound).
# A rack's nodes are descendants of this process, so their CPU counts once their processes are reaped
# (RUSAGE_CHILDREN, getrusage(2)); a module's rack is torn down in its last test's teardown.
_CPU_BY_MODULE: dict[str, float] = {}


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Add the CPU an item used (its fixtures' setup and teardown included) to its module's total."""
    started = _cpu_seconds()
    yield
    module = item.nodeid.split("::", 1)[0]
    _CPU_BY_MODULE[module] = _CPU_BY_MODULE.get(module, 0.0) + _cpu_seconds() - started


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The modules that used the most CPU, with this run's total."""
    if not _CPU_BY_MODULE:
        return
    ranked = sorted(_CPU_BY_MODULE.items(), key=lambda kv: kv[1], reverse=True)
    terminalreporter.section("CPU seconds by module (this process and the processes it reaped)")
    for module, seconds in ranked[:15]:
        terminalreporter.write_line(f"{seconds:9.1f}  {module}")
    terminalreporter.write_line(f"{sum(_CPU_BY_MODULE.values()):9.1f}  all {len(ranked)} modules")
