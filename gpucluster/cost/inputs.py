"""The cost model's inputs read off a cluster: on-prem site, spot interruption model, each with its source."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.clusterfile.catalog.hardware import GPU_MODELS, INSTANCE_TYPES
from gpucluster.clusterfile.catalog.prices import (
    DEFAULT_INTERRUPTION_BAND,
    INTERRUPTION_BANDS,
    SPOT_BAND_BASIS,
    SPOT_INTERRUPTION_BAND,
)
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.aws import CapacityGroup
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.cost.checkpoint import (
    CheckpointPlan,
    Method,
    instance_mtbf_s,
    job_mtbf_s,
    mtbf_from_interruptions_per_day,
    plan,
)
from gpucluster.cost.formulas import OnPremMonthly, onprem_monthly
from gpucluster.cost.markets import cite

DEFAULT_CHECKPOINT_WRITE_S = 120  # a ~1 TiB sharded checkpoint at ~8.5 GiB/s to S3 or a parallel FS
DEFAULT_RESTART_S = 600  # replace a reclaimed instance, rejoin Slurm, reload the checkpoint
DEFAULT = "default (gpucluster.cost)"
FILE = "cluster file"
_ONPREM_FIELDS = (
    "capex_usd",
    "lifetime_years",
    "maintenance_fraction_per_year",
    "staff_usd_per_month",
    "colocation_usd_per_month",
    "electricity_usd_per_kwh",
    "pue",
    "idle_power_fraction",
)


@dataclass(frozen=True)
class InputFigure:
    """One input of the cost model as shown to the reader: name, value and source."""

    name: str
    value: str
    source: str


class CostInputError(Exception):
    """Economics that cannot be costed; names the file, the field path and a hint (exit 2)."""

    def __init__(self, source: str, path: str, message: str, hint: str) -> None:
        super().__init__(f"{source}: {path}: {message}; {hint}")
        self.path = path


def _origin(model: object, field: str, source: str) -> str:
    fields_set: set[str] = getattr(model, "model_fields_set", set())
    return source if field in fields_set else DEFAULT


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def onprem_site(cluster: Cluster, source: str) -> tuple[OnPremMonthly | None, list[InputFigure]]:
    """Monthly cost of the declared racks, or None when the cluster has no GPU racks."""
    if cluster.onprem is None or not cluster.onprem.racks:
        return None, []
    econ = cluster.economics.onprem
    if econ.capex_usd is None:
        raise CostInputError(
            source,
            "economics.onprem.capex_usd",
            "required to cost the on-prem racks",
            "add the purchase price of servers, network, storage and installation in USD",
        )
    gpus, it_kw = 0, 0.0
    for group in node_groups(cluster):
        if group.hardware_profile is not None:  # racks only: cloud capacity is priced per hour
            gpus += len(group.nodes) * group.gpu_count
            it_kw += len(group.nodes) * group.hardware_profile.power_kw
    if gpus == 0:
        return None, []
    monthly = onprem_monthly(
        capex_usd=econ.capex_usd,
        lifetime_years=econ.lifetime_years,
        maintenance_fraction_per_year=econ.maintenance_fraction_per_year,
        staff_usd_per_month=econ.staff_usd_per_month,
        colocation_usd_per_month=econ.colocation_usd_per_month,
        it_power_kw=it_kw,
        pue=econ.pue,
        electricity_usd_per_kwh=econ.electricity_usd_per_kwh,
        idle_power_fraction=econ.idle_power_fraction,
        gpu_count=gpus,
    )
    figures = [
        InputFigure(f"economics.onprem.{name}", _number(getattr(econ, name)), _origin(econ, name, source))
        for name in _ONPREM_FIELDS
    ]
    figures.append(
        InputFigure("on-prem GPUs / IT power", f"{gpus} GPUs, {it_kw:g} kW", "racks × profile power_kw")
    )
    return monthly, figures


def reference_instance_type(cluster: Cluster) -> str | None:
    """The instance type to price AWS markets with: a capacity group's, preferring the racks' GPU."""
    rack_gpus = {p.gpus.model for p in cluster.onprem.profiles.values()} if cluster.onprem else set()
    groups = cluster.aws.capacity if cluster.aws else []
    for group in groups:
        if INSTANCE_TYPES[group.instance_type].gpu in rack_gpus:
            return group.instance_type
    if groups:
        return groups[0].instance_type
    for name, itype in INSTANCE_TYPES.items():
        if itype.gpu in rack_gpus:
            return name
    return None


def spot_plan(
    cluster: Cluster, instance_type: str, method: Method | None = None, source: str = FILE
) -> tuple[CheckpointPlan, list[InputFigure]]:
    """Checkpoint interval and overhead for a job on the spot capacity of one instance type."""
    econ = cluster.economics
    write_s = float(econ.checkpoint_write_s or DEFAULT_CHECKPOINT_WRITE_S)
    restart_s = float(econ.restart_s or DEFAULT_RESTART_S)
    figures = [
        InputFigure(
            "economics.checkpoint_write_s", f"{write_s:g} s", _origin(econ, "checkpoint_write_s", source)
        ),
        InputFigure("economics.restart_s", f"{restart_s:g} s", _origin(econ, "restart_s", source)),
    ]
    if econ.spot_interruptions_per_day is not None:
        mtbf = mtbf_from_interruptions_per_day(econ.spot_interruptions_per_day)
        figures.append(
            InputFigure(
                "economics.spot_interruptions_per_day", f"{econ.spot_interruptions_per_day:g} per job", source
            )
        )
    else:
        band_key, band_source = SPOT_INTERRUPTION_BAND.get(instance_type, (DEFAULT_INTERRUPTION_BAND, None))
        band = INTERRUPTION_BANDS[band_key]
        instances = _spot_instances(cluster, instance_type)
        mtbf = job_mtbf_s(instance_mtbf_s(band.assumed_fraction_per_month), instances)
        where = f"{SPOT_BAND_BASIS}: {cite(band_source)}" if band_source else "default band"
        figures.append(
            InputFigure(
                "spot interruption band",
                f"{band.label} a month ({band.assumed_fraction_per_month:.1%} used), "
                f"job of {instances} instance(s)",
                where,
            )
        )
    chosen: Method = method or econ.checkpoint_interval_method
    return plan(write_s, mtbf, restart_s, chosen), figures


def contract_interval_s(cluster: Cluster, group: CapacityGroup) -> int | None:
    """The interval jobs on a spot group are told (GPUCLUSTER_CHECKPOINT_INTERVAL_S), rounded.

    It is the τ the spot price is computed with. None for other markets, which nothing interrupts.
    """
    if group.market != "spot":
        return None
    checkpoint_plan, _ = spot_plan(cluster, group.instance_type)
    return max(1, round(checkpoint_plan.interval_s))


def _spot_instances(cluster: Cluster, instance_type: str) -> int:
    groups: list[CapacityGroup] = cluster.aws.capacity if cluster.aws else []
    spot = [g for g in groups if g.market == "spot" and g.instance_type == instance_type]
    return spot[0].max_count if spot else 1


def gpu_name(instance_type: str) -> str:
    """The GPU model name of an instance type."""
    return GPU_MODELS[INSTANCE_TYPES[instance_type].gpu].name
