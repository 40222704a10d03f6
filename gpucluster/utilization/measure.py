"""GPU-hours from DCGM engine-active series: available, allocated, active, idle while allocated.

How the series are read:
- A GPU is one (site, node_group, node, gpu[, GPU_I_ID]) of the labels: `site` and `node_group` come from
  our scrape config, `node` from its relabelling (else dcgm-exporter's `Hostname`/`hostname`), `gpu` is
  the exporter's index. Several series of one GPU at one time (a job label changed, or several jobs
  share the GPU: dcgm-exporter writes one series per job in its mapping file) count once.
- Each point of a range query at time t stands for the step [t, t + step). A GPU is *available* for a
  step when a point exists: the node was up and scraped. Missing points (node down, powered-down cloud
  node, failed scrapes longer than Prometheus's 5-minute lookback, Prometheus itself down) are not
  available time, so they lower no ratio; `coverage` in the report shows how much is missing.
- *Allocated*: a series of the GPU at t carries a non-empty `hpc_job` label (dcgm-exporter's HPC job
  mapping, written by the Slurm prolog/epilog). *Active*: the engine-active fraction (0..1, clipped)
  integrated over available time. *Idle while allocated*: allocated time times (1 - active), so
  allocated = active-while-allocated + idle-while-allocated.
- Engine-active is a gauge: there are no counter resets to undo. The figures are exact for the points
  given; against the truth they err by at most one step per change of state (a job start or end).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from gpucluster.utilization.series import Series

SITES_ORDER = ("rack", "cloud")
UNLABELLED = "unlabelled"
SECONDS_PER_DAY = 86400


@dataclass
class _Sums:
    gpus: set[tuple[str, ...]] = field(default_factory=set)
    available_s: float = 0.0
    allocated_s: float = 0.0
    active_s: float = 0.0
    idle_allocated_s: float = 0.0


@dataclass(frozen=True)
class Figures:
    """GPU-hours of one node group, one site, or the whole cluster over the window."""

    site: str
    node_group: str  # "" for a site's or the overall row
    gpus: int  # distinct GPUs seen
    available_gpu_hours: float
    allocated_gpu_hours: float
    active_gpu_hours: float
    idle_allocated_gpu_hours: float

    @property
    def allocation(self) -> float:
        """Allocated / available (0 when nothing was available)."""
        return _ratio(self.allocated_gpu_hours, self.available_gpu_hours)

    @property
    def activity(self) -> float:
        """Active / available: the measured GPU utilization."""
        return _ratio(self.active_gpu_hours, self.available_gpu_hours)

    @property
    def active_of_allocated(self) -> float:
        """Active while allocated / allocated: how well jobs use the GPUs they hold."""
        used = self.allocated_gpu_hours - self.idle_allocated_gpu_hours
        return _ratio(used, self.allocated_gpu_hours)


@dataclass(frozen=True)
class Day:
    """One UTC day of one site: GPU-hours available, allocated and active."""

    day: date
    available_gpu_hours: float
    allocated_gpu_hours: float
    active_gpu_hours: float


@dataclass(frozen=True)
class Measurement:
    """The figures of a window: per node group, per site, overall, and per site per day."""

    start_s: float
    end_s: float
    step_s: float
    groups: list[Figures]
    sites: list[Figures]
    overall: Figures
    daily: dict[str, list[Day]]

    @property
    def hours(self) -> float:
        """The window's length in hours."""
        return (self.end_s - self.start_s) / 3600

    def site(self, name: str) -> Figures | None:
        """The row of one site, if it was measured."""
        return next((f for f in self.sites if f.site == name), None)


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def gpu_key(labels: dict[str, str]) -> tuple[str, str, str, str]:
    """(site, node_group, node, gpu) of a series; a MIG instance is gpu `<index>.<GPU_I_ID>`."""
    node = (
        labels.get("node") or labels.get("Hostname") or labels.get("hostname") or labels.get("instance", "")
    )
    gpu = labels.get("gpu", "")
    if labels.get("GPU_I_ID"):
        gpu = f"{gpu}.{labels['GPU_I_ID']}"
    return labels.get("site", UNLABELLED), labels.get("node_group", UNLABELLED), node, gpu


def _merge(
    series: list[Series], start_s: float, end_s: float
) -> dict[tuple[str, ...], dict[float, tuple[float, bool]]]:
    """{GPU: {t: (engine active, allocated)}} over [start_s, end_s), several series of a GPU merged."""
    gpus: dict[tuple[str, ...], dict[float, tuple[float, bool]]] = defaultdict(dict)
    for one in series:
        points = gpus[gpu_key(one.labels)]
        allocated = bool(one.labels.get("hpc_job"))
        for t, value in one.points:
            if not start_s <= t < end_s:
                continue
            active = min(max(value, 0.0), 1.0)
            before = points.get(t)
            points[t] = (max(active, before[0]), allocated or before[1]) if before else (active, allocated)
    return gpus


def measure(series: list[Series], start_s: float, end_s: float, step_s: float) -> Measurement:
    """The figures of engine-active series over [start_s, end_s), each point standing for step_s."""
    groups: dict[tuple[str, str], _Sums] = defaultdict(_Sums)
    days: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for key, points in _merge(series, start_s, end_s).items():
        sums = groups[(key[0], key[1])]
        sums.gpus.add(key)
        for t, (active, allocated) in points.items():
            sums.available_s += step_s
            sums.active_s += active * step_s
            day = days[(key[0], int(t // SECONDS_PER_DAY))]
            day[0] += step_s
            day[2] += active * step_s
            if allocated:
                sums.allocated_s += step_s
                sums.idle_allocated_s += (1 - active) * step_s
                day[1] += step_s
    rows = [_figures(site, group, sums) for (site, group), sums in sorted(groups.items(), key=_order)]
    sites = [
        _figures(site, "", _total([s for (g_site, _), s in groups.items() if g_site == site]))
        for site in _sites(groups)
    ]
    overall = _figures("all", "", _total(list(groups.values())))
    return Measurement(start_s, end_s, step_s, rows, sites, overall, _daily(days))


def _order(item: tuple[tuple[str, str], _Sums]) -> tuple[int, str, str]:
    (site, group), _ = item
    rank = SITES_ORDER.index(site) if site in SITES_ORDER else len(SITES_ORDER)
    return rank, site, group


def _sites(groups: dict[tuple[str, str], _Sums]) -> list[str]:
    found = {site for site, _ in groups}
    return [s for s in SITES_ORDER if s in found] + sorted(found - set(SITES_ORDER))


def _total(parts: list[_Sums]) -> _Sums:
    total = _Sums()
    for part in parts:
        total.gpus |= part.gpus
        total.available_s += part.available_s
        total.allocated_s += part.allocated_s
        total.active_s += part.active_s
        total.idle_allocated_s += part.idle_allocated_s
    return total


def _figures(site: str, group: str, sums: _Sums) -> Figures:
    return Figures(
        site,
        group,
        len(sums.gpus),
        sums.available_s / 3600,
        sums.allocated_s / 3600,
        sums.active_s / 3600,
        sums.idle_allocated_s / 3600,
    )


def _daily(days: dict[tuple[str, int], list[float]]) -> dict[str, list[Day]]:
    out: dict[str, list[Day]] = defaultdict(list)
    for (site, number), (available, allocated, active) in sorted(days.items()):
        when = datetime.fromtimestamp(number * SECONDS_PER_DAY, UTC).date()
        out[site].append(Day(when, available / 3600, allocated / 3600, active / 3600))
    return dict(out)
