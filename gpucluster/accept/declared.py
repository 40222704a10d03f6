"""What the cluster file declares for one rack node, resolved with catalog defaults."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.accept.errors import AcceptInputError
from gpucluster.clusterfile.catalog.hardware import Fabric, GpuModel
from gpucluster.clusterfile.catalog.thresholds import multi_node_min_busbw_gbs, single_node_min_busbw_gbs
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import group_of_host


@dataclass(frozen=True)
class Declared:
    """The hardware and software a node must show, from its rack's hardware profile."""

    cluster: str
    host: str
    profile: str
    gpu: GpuModel
    gpu_count: int
    cpu_count: int  # as Slurm counts them on the node line: sockets × cores × threads
    nvswitch: bool
    hca_count: int
    fabric: Fabric | None
    hca_prefix: str
    gpudirect_rdma: bool
    driver_version: str
    dcgm_level: int
    nccl_test_size: str  # all_reduce_perf -b/-e, e.g. "1G"
    min_single_node_busbw_gbs: float
    min_multi_node_busbw_gbs: float | None
    max_corrected_ecc_errors: int


def declared_for(cluster: Cluster, host: str) -> Declared:
    """Resolve `host`'s profile; raise AcceptInputError for hosts that are not in a rack."""
    group = group_of_host(cluster, host)
    profile = group.hardware_profile if group else None
    if group is None or profile is None:
        racks = [r.name for r in cluster.onprem.racks] if cluster.onprem else []
        raise AcceptInputError(
            f"host {host!r} is not a node of any rack in cluster {cluster.name!r}; "
            f"acceptance covers rack nodes (racks: {', '.join(racks) or 'none'})"
        )
    acceptance = profile.acceptance
    fabric = group.fabric
    return Declared(
        cluster=cluster.name,
        host=host,
        profile=group.profile,
        gpu=group.gpu,
        gpu_count=group.gpu_count,
        cpu_count=profile.cpus.sockets * profile.cpus.cores_per_socket * profile.cpus.threads_per_core,
        nvswitch=group.nvswitch,
        hca_count=group.fabric_ports,
        fabric=fabric,
        hca_prefix=group.hca_prefix,
        gpudirect_rdma=profile.hcas.gpudirect_rdma,
        driver_version=cluster.versions.nvidia_driver,
        dcgm_level=acceptance.dcgm_level,
        nccl_test_size=acceptance.nccl_test_size,
        min_single_node_busbw_gbs=single_node_min_busbw_gbs(
            group.gpu.key, acceptance.min_single_node_busbw_gbs
        ),
        min_multi_node_busbw_gbs=(
            multi_node_min_busbw_gbs(fabric.key, group.fabric_ports, acceptance.min_multi_node_busbw_gbs)
            if fabric is not None
            else None
        ),
        max_corrected_ecc_errors=acceptance.max_corrected_ecc_errors,
    )
