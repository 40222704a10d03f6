"""The health checks of one node group, from the cluster file alone: what runs when, with what limits.

The catalogue is the JSON the node program (gpucluster/health/node_program.py) reads. Each check names
when it runs: `prolog` (before every job: quick, so it fits Slurm's PrologEpilogTimeout), `epilog` (after
every job: what the job may have broken) and `periodic` (HealthCheckProgram on idle nodes: adds DCGM's
diagnostic and the clock). Each failure carries a reason code (docs/health.md lists them).
"""

from __future__ import annotations

import json
from typing import Any, Final

from gpucluster import names
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import NodeGroup

EVERY: Final = ("prolog", "epilog", "periodic")
# DCGM's quick diagnostic takes seconds to a minute per node, the medium one several minutes:
# https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html
DCGM_LIMIT_S: Final = {1: 120, 2: 900}
SERVICE_LIMIT_S: Final = 5
SCONTROL_LIMIT_S: Final = 20  # one call to slurmctld: the node's state, then the drain or reboot
# The tool each check runs (the key of its time limit); mounts and memory read files only.
TOOL_OF_CHECK: Final = {
    "gpus": "nvidia-smi",
    "ecc": "nvidia-smi",
    "xid": "journalctl",
    "nvlink": "nvlink",
    "fabric_manager": "fabric-manager",
    "dcgm_diag": "dcgmi",
    "clock": "timedatectl",
}
# Python's start, the job mapping and the log line, above the tools and the two scontrol calls.
OVERHEAD_S: Final = 10


def _gpu_checks(cluster: Cluster, group: NodeGroup) -> list[dict[str, Any]]:
    if group.gpu_count == 0:
        return []
    profile = group.hardware_profile
    # A userspace profile's driver is not ours to pin (gpu_nvidia_driver installs user space only there).
    driver = (
        "" if profile is not None and profile.install_mode == "userspace" else cluster.versions.nvidia_driver
    )
    checks: list[dict[str, Any]] = [
        {"name": "gpus", "when": EVERY, "count": group.gpu_count, "model": group.gpu.name, "driver": driver},
        {"name": "ecc", "when": EVERY},
        {"name": "xid", "when": EVERY},
    ]
    if group.nvswitch:
        checks += [
            {"name": "nvlink", "when": ("epilog", "periodic")},
            {"name": "fabric_manager", "when": EVERY},
        ]
    checks.append({"name": "dcgm_diag", "when": ("periodic",), "level": cluster.health.dcgm_diag_level})
    return checks


def catalogue(cluster: Cluster, group: NodeGroup) -> dict[str, Any]:
    """The catalogue of one node group: its site, the checks in order, the tools' time limits."""
    settings = cluster.health
    checks = _gpu_checks(cluster, group)
    if settings.mounts:
        checks.append({"name": "mounts", "when": ("prolog", "periodic"), "paths": list(settings.mounts)})
    checks += [
        {
            "name": "memory",
            "when": ("prolog", "periodic"),
            "min_available_fraction": settings.min_available_memory_fraction,
        },
        {"name": "clock", "when": ("periodic",)},
    ]
    tool = settings.tool_limit_s
    return {
        "node_group": group.name,
        "site": "rack" if group.site == "onprem" else "cloud",
        "reason_prefix": names.HEALTH_REASON,
        "checks": [{**c, "when": list(c["when"])} for c in checks if c["name"] not in settings.skip],
        "limits": {
            "nvidia-smi": tool,
            "nvlink": tool,
            "journalctl": tool,
            "fabric-manager": SERVICE_LIMIT_S,
            "timedatectl": SERVICE_LIMIT_S,
            "dcgmi": DCGM_LIMIT_S[settings.dcgm_diag_level],
            "scontrol": SCONTROL_LIMIT_S,
        },
    }


def budget_s(entry: dict[str, Any], when: str) -> float:
    """The longest one pass `when` can take: each tool it runs at its limit (nvidia-smi runs once a pass)."""
    used = {
        TOOL_OF_CHECK[c["name"]] for c in entry["checks"] if when in c["when"] and c["name"] in TOOL_OF_CHECK
    }
    return float(sum(entry["limits"][t] for t in used))


def prolog_epilog_timeout_s(entries: list[dict[str, Any]]) -> int:
    """Slurm's PrologEpilogTimeout: the slowest prolog or epilog pass, its two scontrol calls, the start-up.

    So Slurm never kills a pass that is still within its tools' limits.
    """
    slowest = max((budget_s(e, w) for e in entries for w in ("prolog", "epilog")), default=0.0)
    return int(slowest) + 2 * SCONTROL_LIMIT_S + OVERHEAD_S


def catalogue_json(entry: dict[str, Any], comment: str = "") -> str:
    """The node file's text; the generated-file header (JSON has no comments) goes under `_comment`."""
    data = {**({"_comment": comment.splitlines()} if comment else {}), **entry}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
