"""Prometheus on the controller: how long it keeps what it scrapes, and how often it scrapes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gpucluster.clusterfile.model.common import Strict

# The field guides measure 2 to 4 weeks before choosing; 35 days keeps a 28-day window and a week's slack.
MIN_RETENTION_DAYS = 35


class Monitoring(Strict):
    """The controller's Prometheus (templates/monitoring/): the roles install it, this sizes it."""

    enabled: bool = Field(
        default=True,
        description=(
            "Install Prometheus on the controller (role monitoring_prometheus) and node exporter on every"
            " rack node and in the cloud node image (monitoring_node_exporter); false leaves monitoring to"
            " the site. The files are rendered either way."
        ),
    )

    retention_days: Annotated[int, Field(ge=MIN_RETENTION_DAYS, le=3650)] = Field(
        default=MIN_RETENTION_DAYS,
        description=(
            "Days Prometheus keeps samples (--storage.tsdb.retention.time); at least 35 so"
            " `gpucluster utilization --days 28` always finds four whole weeks."
        ),
    )
    scrape_interval_s: Annotated[int, Field(ge=5, le=300)] = Field(
        default=30,
        description=(
            "How often every exporter is scraped; 30 matches dcgm-exporter's default collection"
            " interval (-c 30000), so each scrape sees a fresh value."
        ),
    )
