"""Per-job node health: which checks run around jobs, with what limits (gpucluster.health.catalogue)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from gpucluster.clusterfile.model.common import Strict

CheckName = Literal[
    "gpus", "ecc", "xid", "nvlink", "fabric_manager", "dcgm_diag", "mounts", "memory", "clock"
]


class Health(Strict):
    """Per-job node health (docs/health.md): what gpucluster-health checks around jobs and between them."""

    enabled: bool = Field(
        default=True,
        description=(
            "Run the checks from Slurm's Prolog and Epilog and as its HealthCheckProgram; a failing node is"
            " drained (cloud: replaced; rack: rebooted once where that can help)."
        ),
    )
    interval_s: Annotated[int, Field(ge=60, le=86400)] = Field(
        default=300,
        description="Seconds between the periodic passes on idle nodes (Slurm's HealthCheckInterval).",
    )

    mounts: list[Annotated[str, Field(pattern=r"^/[^\s]*$")]] = Field(
        default_factory=list,
        description=(
            "Mount points every GPU node must have mounted (shared home, datasets); checked before each job."
        ),
    )
    min_available_memory_fraction: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.5,
        description=(
            "MemAvailable must be at least this share of MemTotal on an idle node (leaked or pinned memory)."
        ),
    )
    dcgm_diag_level: Literal[1, 2] = Field(
        default=1,
        description=(
            "`dcgmi diag -r LEVEL` in the periodic check of idle nodes: 1 quick (seconds),"
            " 2 medium (minutes)."
        ),
    )
    tool_limit_s: Annotated[int, Field(ge=2, le=60)] = Field(
        default=10,
        description=(
            "Seconds one tool (nvidia-smi, journalctl …) may take before the check counts it as hung."
        ),
    )
    skip: list[CheckName] = Field(
        default_factory=list,
        description="Checks not to run anywhere, e.g. clock where the site's nodes keep time without NTP.",
    )
