"""The cluster file as typed, frozen values: the only shape the rest of gpucluster sees."""

from __future__ import annotations

from typing import Literal

from gpucluster.clusterfile.model.aws import Aws
from gpucluster.clusterfile.model.common import Name, Strict
from gpucluster.clusterfile.model.economics import Economics
from gpucluster.clusterfile.model.health import Health
from gpucluster.clusterfile.model.monitoring import Monitoring
from gpucluster.clusterfile.model.onprem import OnPrem
from gpucluster.clusterfile.model.routing import Routing
from gpucluster.clusterfile.model.software import Slurm, Versions


class Cluster(Strict):
    """One GPU training cluster, partly in AWS and partly on-prem, under one Slurm."""

    apiVersion: Literal["gpucluster/v1"]  # noqa: N815 - the file's key, Kubernetes style
    kind: Literal["Cluster"]
    name: Name
    versions: Versions = Versions()
    slurm: Slurm
    onprem: OnPrem | None = None
    aws: Aws | None = None
    economics: Economics = Economics()
    monitoring: Monitoring = Monitoring()
    health: Health = Health()
    routing: Routing | None = None
