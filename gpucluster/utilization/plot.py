"""Daily GPU-hours per site: available, allocated and engine-active (matplotlib, as cost --plot)."""

from __future__ import annotations

from pathlib import Path

from gpucluster.utilization.measure import Measurement


def write_plot(measurement: Measurement, cluster: str, path: str | Path) -> Path:
    """One panel per site, one point per UTC day; needs matplotlib (imported here so nothing else does)."""
    import matplotlib  # noqa: PLC0415 - optional dependency, only `utilization --plot` needs it

    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: PLC0415 - after the headless backend is chosen

    sites = list(measurement.daily) or ["all"]
    figure, panels = pyplot.subplots(len(sites), 1, figsize=(10, 3 + 3 * len(sites)), dpi=120, squeeze=False)
    for axes, site in zip(panels[:, 0], sites, strict=True):
        days = measurement.daily.get(site, [])
        when = [d.day for d in days]
        axes.plot(when, [d.available_gpu_hours for d in days], color="grey", linewidth=1, label="available")
        axes.plot(
            when, [d.allocated_gpu_hours for d in days], linewidth=2, label="allocated (a job holds it)"
        )
        axes.plot(
            when, [d.active_gpu_hours for d in days], linewidth=2, label="active (engine-active × time)"
        )
        axes.set_ylim(0, None)
        axes.set_ylabel("GPU-hours per day")
        axes.set_title(f"{site}")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="upper right", fontsize=9)
    figure.suptitle(f"{cluster}: daily GPU-hours measured by DCGM")
    figure.autofmt_xdate()
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, format="png")
    pyplot.close(figure)
    return out
