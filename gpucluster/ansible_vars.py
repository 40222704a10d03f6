"""The one place that maps cluster-file vocabulary to Ansible groups and role variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucluster.spec.model import Cluster
from gpucluster.spec.nodes import node_groups

# Fixed ids so files on shared storage and munge credentials agree on every node.
SLURM_UID = 64030
MUNGE_UID = 64031


@dataclass
class Inventory:
    """Hosts with their variables and the groups they belong to."""

    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)

    def add(self, host: str, *groups: str) -> None:
        """Put a host into groups (creating them)."""
        for group in groups:
            members = self.groups.setdefault(group, [])
            if host not in members:
                members.append(host)


def _group_name(kind: str, name: str) -> str:
    return f"{kind}_{name}".replace("-", "_")


def inventory(cluster: Cluster, source: str) -> Inventory:
    """On-prem hosts: service hosts and rack nodes, grouped by site, rack, profile and Slurm role."""
    result = Inventory()
    if cluster.onprem is None:
        return result
    controller = cluster.slurm.controller
    accounting_host = cluster.slurm.accounting.host or controller
    common = _common_vars(cluster, source)
    for service in cluster.onprem.service_hosts:
        result.hosts[service.name] = {**common, "ansible_host": str(service.address)}
        result.add(service.name, "site_onprem", "service_hosts")
    for group in node_groups(cluster):
        if group.site != "onprem":
            continue
        for name, address in zip(group.hosts, group.addresses, strict=True):
            result.hosts[name] = {**common, **_node_vars(group.gpu_count), "ansible_host": str(address)}
            result.add(
                name,
                "site_onprem",
                _group_name("rack", group.name),
                _group_name("profile", group.profile),
                "slurm_compute",
            )
    if controller in result.hosts:
        result.add(controller, "slurm_controller")
    if cluster.slurm.accounting.enabled and accounting_host in result.hosts:
        result.add(accounting_host, "slurm_accounting")
    return result


def _common_vars(cluster: Cluster, source: str) -> dict[str, Any]:
    return {
        "gpucluster_cluster_file": source,
        "gpucluster_cluster_name": cluster.name,
        "slurm_common_cluster_name": cluster.name,
        "slurm_common_controller_host": cluster.slurm.controller,
        "slurm_common_slurm_uid": SLURM_UID,
        "slurm_common_munge_uid": MUNGE_UID,
        "slurm_controller_accounting_enabled": cluster.slurm.accounting.enabled,
        "slurm_controller_slurmctld_port": cluster.slurm.slurmctld_port,
        "slurm_node_slurmd_port": cluster.slurm.slurmd_port,
    }


def _node_vars(gpu_count: int) -> dict[str, Any]:
    return {
        "slurm_node_gpu_devices": [f"/dev/nvidia{n}" for n in range(gpu_count)],
    }
