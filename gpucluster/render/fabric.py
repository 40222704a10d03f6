"""NCCL and libfabric settings per node group, gated on the versions pinned in the cluster file."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import NodeGroup

# libfabric ≥ 1.18 (EFA installer ≥ 1.24) enables GPUDirect RDMA on EFA by itself; setting
# FI_EFA_USE_DEVICE_RDMA is only needed before that.
# https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md
_EFA_INSTALLER_AUTO_RDMA = (1, 24)
# EFA installer ≥ 1.20 ships libfabric ≥ 1.16 whose EFA provider is fork-safe on its own.
_EFA_INSTALLER_FORK_SAFE = (1, 20)


def version_tuple(version: str) -> tuple[int, ...]:
    """'1.41.0' → (1, 41, 0); anything after a '-' is ignored."""
    return tuple(int(part) for part in version.split("-", maxsplit=1)[0].split("."))


@dataclass(frozen=True)
class FabricContext:
    """Environment for NCCL (nccl.conf) and for the fabric libraries (fabric.env)."""

    kind: str  # "efa" | "infiniband" | "socket"
    nccl: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def all_env(self) -> dict[str, str]:
        """NCCL and fabric-library variables together, for a systemd EnvironmentFile."""
        return {**self.nccl, **self.env}


def fabric_context(cluster: Cluster, group: NodeGroup) -> FabricContext:
    """NCCL settings for a node group's fabric."""
    nccl = {"NCCL_SOCKET_IFNAME": "^lo,docker"}
    if group.fabric is None:
        return FabricContext("socket", {**nccl, "NCCL_IB_DISABLE": "1"}, {})
    if group.fabric.kind == "efa":
        return _efa(cluster, nccl)
    hcas = ",".join(f"{group.hca_prefix}_{n}" for n in range(group.fabric_ports))
    # '=' makes NCCL match the HCA names exactly: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
    nccl.update({"NCCL_IB_HCA": f"={hcas}", "NCCL_NET_GDR_LEVEL": "PHB"})
    return FabricContext("infiniband", nccl, {"UCX_NET_DEVICES": ",".join(f"{h}:1" for h in hcas.split(","))})


def _efa(cluster: Cluster, nccl: dict[str, str]) -> FabricContext:
    installer = version_tuple(cluster.versions.efa_installer)
    env = {
        "FI_PROVIDER": "efa",
        "LD_LIBRARY_PATH": "/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:/usr/local/cuda/lib64",
    }
    if installer < _EFA_INSTALLER_AUTO_RDMA:
        env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    if installer < _EFA_INSTALLER_FORK_SAFE:
        env["FI_EFA_FORK_SAFE"] = "1"
    return FabricContext("efa", nccl, env)
