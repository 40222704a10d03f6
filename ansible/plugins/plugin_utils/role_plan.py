"""What the roles' plan filters share: the plan's shape, the NVIDIA repository gate, apt holds.

A role's plan filter (plugins/filter/<role>_plan.py) turns the role's inputs and its node state (the
gpucluster.cluster.node_state answer) into a plan: the input checks that fail, why an install is skipped,
and the steps a converge would do. The role's main.yml includes its converge.yml only where the plan has
something to do (`todo`), and each step there runs only where `pending` names it.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import packages_unheld

# gpu_nvidia_driver adds NVIDIA's CUDA repository here (on Debian 12 unless Debian's own non-free tools
# were chosen: userspace mode without onprem.package_mirror). Rocky/RHEL always has its dnf repository.
NVIDIA_APT_SOURCES = "/etc/apt/sources.list.d/cuda.sources"
NO_NVIDIA_REPOSITORY = (
    f"NVIDIA's CUDA repository is not configured ({NVIDIA_APT_SOURCES} is missing), as in Debian 12"
    " userspace mode without onprem.package_mirror"
)


def plan(failed: list[str], steps: dict[str, Any] | None = None, skipped: str = "") -> dict[str, Any]:
    """The plan: failed checks, the skip reason, each step's value and `pending` (the steps set, in order)."""
    steps = {} if failed else dict(steps or {})
    pending = [name for name, value in steps.items() if value]
    return {
        **steps,
        "failed": failed,
        "skipped": skipped,
        "pending": pending,
        "todo": bool(failed or pending),
    }


def failed_checks(checks: list[tuple[bool, str]]) -> list[str]:
    """The messages of the checks that do not hold."""
    return [message for holds, message in checks if not holds]


def matches(pattern: str, value: Any) -> bool:
    """Ansible's `match` test: the pattern at the start of the text."""
    return re.match(pattern, str(value)) is not None


def as_int(value: Any) -> int:
    """Jinja's `int` filter: the number, or 0 where the value is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def as_bool(value: Any) -> bool:
    """Ansible's `bool` filter (yes, on, true, 1 …)."""
    return bool(boolean(value, strict=False))


def nvidia_repository_skip(state: dict[str, Any], os_family: str) -> str:
    """Why a role that installs from NVIDIA's CUDA repository installs nothing here ('' where it can)."""
    if os_family == "RedHat":
        return ""
    files = state.get("files", {}) if isinstance(state, dict) else {}
    return "" if files.get(NVIDIA_APT_SOURCES, {}).get("exists") else NO_NVIDIA_REPOSITORY


def installed_names(state: dict[str, Any], after: dict[str, Any] | None) -> list[str]:
    """The installed packages: dpkg-query's lines after this run's install (`after.installed`) or the read."""
    lines = (after or {}).get("installed")
    if lines is not None:
        return [str(line).split(" ")[0] for line in lines]
    return list(state.get("installed", [])) if isinstance(state, dict) else []


def apt_to_hold(state: dict[str, Any], names: list[str], after: dict[str, Any] | None) -> list[str]:
    """The packages to `apt-mark hold`: all after an install that changed, else those the read shows unheld.

    An install with --allow-change-held-packages drops the hold of what it upgrades (dpkg status "ii"
    afterwards), so after one (`after.changed`) every package is held again.
    """
    if (after or {}).get("changed"):
        return list(names)
    return packages_unheld(state, names)
