"""Synthetic engine-active series whose GPU-hours are known by construction."""

from __future__ import annotations

from gpucluster.utilization.series import Series

HOUR_S = 3600
STEP_S = 60
START_S = 1_800_000_000 - 1_800_000_000 % 86400  # a UTC midnight


def gpu_labels(site: str, group: str, node: str, gpu: int, job: str = "") -> dict[str, str]:
    """The labels a scraped dcgm-exporter series carries: the exporter's, then our target labels."""
    labels = {
        "__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": node,
        "instance": node,
        "job": "dcgm",
        "node": node,
        "site": site,
        "node_group": group,
    }
    if job:
        labels["hpc_job"] = job
    return labels


def flat(labels: dict[str, str], first_s: float, last_s: float, value: float, step_s: int = STEP_S) -> Series:
    """A series holding one value at every step from first_s up to (not including) last_s."""
    count = int((last_s - first_s) // step_s)
    return Series(labels, tuple((first_s + i * step_s, value) for i in range(count)))


def answer(series: list[Series]) -> dict[str, object]:
    """A successful query_range answer holding these series, as Prometheus writes it."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": s.labels, "values": [[t, f"{v:g}"] for t, v in s.points]} for s in series],
        },
    }
