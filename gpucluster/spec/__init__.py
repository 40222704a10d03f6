"""The cluster file: typed model, loader with friendly errors, catalog and derived node groups."""

from gpucluster.spec.findings import Finding, SpecError
from gpucluster.spec.load import DEFAULT_CLUSTER_FILE, Loaded, load, load_text
from gpucluster.spec.model import Cluster
from gpucluster.spec.nodes import NodeGroup, node_groups

__all__ = [
    "DEFAULT_CLUSTER_FILE",
    "Cluster",
    "Finding",
    "Loaded",
    "NodeGroup",
    "SpecError",
    "load",
    "load_text",
    "node_groups",
]
