"""The cluster file: typed model, loader with friendly errors, catalog and derived node groups."""

from gpucluster.clusterfile.findings import ClusterFileError, Finding
from gpucluster.clusterfile.load import DEFAULT_CLUSTER_FILE, Loaded, load, load_text
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import NodeGroup, node_groups

__all__ = [
    "DEFAULT_CLUSTER_FILE",
    "Cluster",
    "ClusterFileError",
    "Finding",
    "Loaded",
    "NodeGroup",
    "load",
    "load_text",
    "node_groups",
]
