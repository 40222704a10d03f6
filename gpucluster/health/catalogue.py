"""The health checks of one node group, from the cluster file alone: what runs when, with what limits.

The catalogue is the JSON the node program (gpucluster/health/node_program.py) reads. Each check names
when it runs: `prolog` (before every job: quick, so it fits Slurm's PrologEpilogTimeout), `epilog` (after
every job: what the job may have broken) and `periodic` (HealthCheckProgram on idle nodes: adds DCGM's
diagnostic and the clock). Each failure carries a reason code (docs/health.md lists them).
"""

from __future__ import annotations

from typing import Any, Final

from gpucluster import names
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import NodeGroup

EVERY: Final = ("prolog", "epilog", "periodic")
# DCGM's quick diagnostic takes seconds to a minute per node, the medium one several minutes:
# https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html
DCGM_LIMIT_S: Final = {1: 120, 2: 900}
SERVICE_LIMIT_S: Final = 5


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
        },
    }


def prolog_budget_s(entry: dict[str, Any]) -> float:
    """The longest a prolog pass can take: each tool it runs at its limit (Slurm's timeout must exceed it)."""
    tools = {
        "gpus": "nvidia-smi",
        "ecc": "nvidia-smi",
        "xid": "journalctl",
        "nvlink": "nvlink",
        "fabric_manager": "fabric-manager",
    }
    used = {tools[c["name"]] for c in entry["checks"] if "prolog" in c["when"] and c["name"] in tools}
    return float(sum(entry["limits"][t] for t in used))
