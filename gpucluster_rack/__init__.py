"""The test rack: Debian nodes booted on this machine (systemd-nspawn), an emulated AWS beside them.

The harness of `make demo`, `make rack-up` / `make rack-down` (`python -m gpucluster_rack`), the rack
tests under tests/rack/ and the rack benchmarks under bench/. It runs from a checkout (its playbooks,
its .venv, the recorded probe outputs under tests/accept/samples/) and is not part of the wheel.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
