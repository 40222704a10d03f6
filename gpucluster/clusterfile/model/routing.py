"""Hybrid routing: which jobs stay on the racks, which burst to the cloud and when, which go to spot."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, StringConstraints, model_validator

from gpucluster.clusterfile.model.common import Fraction, Name, Strict

Route = Literal["rack", "cloud", "spot", "rack_then_cloud"]
SlurmWord = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class RoutePartitions(Strict):
    """The Slurm partition each route target means; rack only racks, cloud and spot only AWS groups."""

    rack: Name = Field(
        default="rack", description="Rack capacity: where `rack` jobs go and `rack_then_cloud` jobs start."
    )
    cloud: Name = Field(
        default="cloud",
        description="On-demand capacity: where `cloud` jobs go and `rack_then_cloud` jobs are widened to.",
    )
    spot: Name | None = Field(
        default=None, description="Spot capacity: where `spot` jobs go (needed when a class routes to spot)."
    )


class JobClass(Strict):
    """A kind of job, recognised by its account, QOS or comment tag, and where it goes."""

    name: Name = Field(description="What job_submit.lua and the controller's log call the class.")
    accounts: list[SlurmWord] = Field(
        default_factory=list, description="Jobs charged to one of these Slurm accounts are of this class."
    )
    qos: list[SlurmWord] = Field(
        default_factory=list, description="Jobs submitted with one of these QOS are of this class."
    )
    route: Route = Field(
        description=(
            "rack, cloud or spot: the job is sent to that partition; rack_then_cloud: to the rack, widened"
            " to the cloud partition once its expected rack start is later than after_wait_minutes."
        )
    )
    after_wait_minutes: Annotated[int, Field(ge=1, le=10080)] | None = Field(
        default=None,
        description="rack_then_cloud only: the expected wait (submit to rack start) that lets it burst.",
    )
    max_cloud_nodes: PositiveInt | None = Field(
        default=None,
        description="rack_then_cloud only: no widening while this class holds this many cloud nodes.",
    )
    budget_share: Fraction | None = Field(
        default=None,
        description=(
            "rack_then_cloud only: no widening once this class's cloud spend this month reaches this"
            " share of aws.budget.monthly_limit_usd."
        ),
    )

    @model_validator(mode="after")
    def _wait_only_when_bursting(self) -> JobClass:
        bursting = self.route == "rack_then_cloud"
        if bursting and self.after_wait_minutes is None:
            raise ValueError(
                "route rack_then_cloud needs after_wait_minutes (e.g. 90: burst once the rack's"
                " expected wait passes 90 minutes)"
            )
        guards = [
            n
            for n in ("after_wait_minutes", "max_cloud_nodes", "budget_share")
            if getattr(self, n) is not None
        ]
        if not bursting and guards:
            raise ValueError(
                f"{', '.join(guards)} only apply to route rack_then_cloud, not {self.route}; remove them"
                " (cap jobs routed straight to the cloud with a QOS limit such as GrpTRES=node=N)"
            )
        return self


class Routing(Strict):
    """Job classes and their routes; rendered into job_submit.lua and the burst controller's settings."""

    classes: Annotated[list[JobClass], Field(min_length=1)] = Field(
        description=(
            "A job's class: the one its --comment names (class=<name>), else the one listing its account,"
            " else the one listing its QOS, else default_class."
        )
    )
    default_class: Name | None = Field(
        default=None,
        description="The class of a job no class recognises; unset: such a job is left as submitted.",
    )
    partitions: RoutePartitions = RoutePartitions()
    interval_s: Annotated[int, Field(ge=10, le=600)] = Field(
        default=60, description="Period of the burst controller's pass on the controller."
    )
