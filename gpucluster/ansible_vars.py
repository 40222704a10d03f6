"""The one place that maps cluster-file vocabulary to Ansible groups and role variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucluster import __version__, names
from gpucluster.accept.admission import AWAITING_REASON
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.model.onprem import HardwareProfile, OnPrem
from gpucluster.clusterfile.nodes import Node, NodeGroup, node_groups
from gpucluster.names import MUNGE_UID, SLURM_UID
from gpucluster.pins import pin_sources


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


def inventory(cluster: Cluster, source: str) -> Inventory:
    """On-prem hosts: service hosts and rack nodes, grouped by site, rack, profile and Slurm role."""
    result = Inventory()
    if cluster.onprem is None:
        return result
    controller = cluster.slurm.controller
    accounting_host = cluster.slurm.accounting.host or controller
    common = _common_vars(cluster, source)
    result.groups[names.SUBNET_MANAGER_GROUP] = []  # always defined, so site.yml's play never warns
    for service in cluster.onprem.service_hosts:
        result.hosts[service.name] = {**common, "ansible_host": str(service.address)}
        result.add(service.name, names.ONPREM_SITE_GROUP, names.SERVICE_HOSTS_GROUP)
        if service.name == cluster.onprem.subnet_manager:
            # A service host runs opensm only: it has no hardware profile, so no GPU stack.
            result.hosts[service.name]["net_infiniband_subnet_manager"] = True
            result.add(service.name, names.SUBNET_MANAGER_GROUP)
    for group in node_groups(cluster):
        if group.hardware_profile is None:
            continue  # AWS capacity groups: cloud nodes are configured by their image and user data
        for node in group.nodes:
            result.hosts[node.name] = {**common, **node_vars(cluster, group, node)}
            result.add(
                node.name,
                names.ONPREM_SITE_GROUP,
                names.rack_group(group.name),
                names.profile_group(group.profile),
                names.SLURM_COMPUTE_GROUP,
            )
            if node.name == cluster.onprem.subnet_manager:
                result.add(node.name, names.SUBNET_MANAGER_GROUP)
    if controller in result.hosts:
        result.add(controller, names.SLURM_CONTROLLER_GROUP)
        result.hosts[controller]["monitoring_prometheus_enabled"] = cluster.monitoring.enabled
    if cluster.slurm.accounting.enabled and accounting_host in result.hosts:
        result.add(accounting_host, names.SLURM_ACCOUNTING_GROUP)
    return result


def _common_vars(cluster: Cluster, source: str) -> dict[str, Any]:
    return {
        "gpucluster_cluster_file": source,
        "gpucluster_cluster_name": cluster.name,
        "slurm_common_cluster_name": cluster.name,
        "slurm_common_controller_host": cluster.slurm.controller,
        "slurm_common_slurm_version": cluster.versions.slurm,
        "slurm_common_time_servers": list(cluster.onprem.time_servers) if cluster.onprem else [],
        **_slurm_package_vars(cluster),
        "slurm_controller_accounting_enabled": cluster.slurm.accounting.enabled,
        "slurm_controller_slurmctld_port": cluster.slurm.slurmctld_port,
        "slurm_node_slurmd_port": cluster.slurm.slurmd_port,
        **_power_vars(cluster),
        # Node exporter on every rack host; Prometheus on the controller only (set in inventory()).
        "monitoring_node_exporter_enabled": cluster.monitoring.enabled,
        "monitoring_prometheus_enabled": False,
    }


def _power_vars(cluster: Cluster) -> dict[str, Any]:
    """The controller's power programs: on with cloud capacity, at this gpucluster's own version."""
    if cluster.aws is None or not cluster.aws.capacity:
        return {"slurm_controller_power_enabled": False}
    return {
        "slurm_controller_power_enabled": True,
        "slurm_controller_power_requirement": f"gpucluster[power]=={__version__}",
        "slurm_controller_reconcile_seconds": cluster.aws.burst.reconcile_seconds,
        "slurm_controller_prometheus_targets_dir": names.PROMETHEUS_CLOUD_TARGETS,
    }


def _slurm_package_vars(cluster: Cluster) -> dict[str, Any]:
    packages = cluster.slurm.packages
    release = packages.release
    build_host = (release.build_host or cluster.slurm.controller) if release else ""
    return {
        "slurm_common_package_source": packages.source,
        "slurm_common_package_repository": packages.repository or "",
        "slurm_common_package_signing_key": packages.signing_key or "",
        # source upstream-release: the tarball, its checksum and the rack host that builds the packages.
        "slurm_common_release_url": release.url_for(cluster.versions.slurm) if release else "",
        "slurm_common_release_sha256": release.sha256 if release else "",
        "slurm_common_release_build_host": build_host,
        "slurm_common_slurm_uid": SLURM_UID,
        "slurm_common_munge_uid": MUNGE_UID,
        "slurm_common_job_users": [
            {"name": a.name, "uid": a.uid, "gid": a.group_id} for a in cluster.slurm.users.accounts
        ],
    }


def node_vars(cluster: Cluster, group: NodeGroup, node: Node) -> dict[str, Any]:
    """Every variable of one rack node: address, Slurm GPU devices, acceptance settings, GPU stack."""
    assert group.hardware_profile is not None
    acceptance = group.hardware_profile.acceptance
    return {
        "ansible_host": str(node.address),
        "slurm_node_gpu_devices": list(group.gpu_devices),
        # ansible/playbooks/accept.yml (role node_acceptance) probes with these and has no defaults of its
        # own, so a node is probed at the level it is judged at (gpucluster.accept reads the same profile).
        "gpucluster_accept_dcgm_level": acceptance.dcgm_level,
        "gpucluster_accept_nccl_test_size": acceptance.nccl_test_size,
        "gpucluster_accept_gpu_count": group.gpu_count,
        # A new node registers drained with this reason; accept.yml resumes only drains that carry it.
        "slurm_node_acceptance_reason": AWAITING_REASON,
        **gpu_stack_vars(cluster, group, node),
        **_reboot_vars(cluster, group),
    }


def _reboot_vars(cluster: Cluster, group: NodeGroup) -> dict[str, Any]:
    """The reboot bound a driver change keeps to: the node's rack and the cluster file's limits."""
    assert cluster.onprem is not None
    reboots = cluster.onprem.reboots
    return {
        "gpu_nvidia_driver_rack_nodes": [n.name for n in group.nodes],
        "gpu_nvidia_driver_reboot_max_nodes": reboots.max_nodes,
        "gpu_nvidia_driver_reboot_max_rack_percent": reboots.max_rack_percent,
    }


def gpu_stack_vars(cluster: Cluster, group: NodeGroup, node: Node) -> dict[str, Any]:
    """GPU and fabric role variables of one rack node, from its hardware profile and the pinned versions."""
    assert cluster.onprem is not None and group.hardware_profile is not None
    profile = group.hardware_profile
    versions = cluster.versions
    mode = profile.install_mode
    mirror = cluster.onprem.package_mirror or ""
    return {
        **pin_vars(cluster, "onprem"),
        "gpu_nvidia_driver_install_mode": mode,
        "gpu_nvidia_driver_nvswitch": profile.nvswitch and profile.gpus.count > 0,
        "gpu_nvidia_driver_peermem": profile.hcas.count > 0 and profile.hcas.gpudirect_rdma,
        "gpu_nvidia_driver_rdma_stack": profile.hcas.stack,
        "gpu_nvidia_driver_package_mirror": mirror,
        "gpu_cuda_toolkit_install_mode": mode,
        "gpu_dcgm_install_mode": mode,
        "gpu_dcgm_cuda_version": versions.cuda,
        "gpu_dcgm_job_mapping_dir": names.DCGM_JOB_MAPPING_DIR,
        "gpu_nccl_cuda_version": versions.cuda,
        "gpu_nccl_install_mode": mode,
        **_infiniband_vars(cluster.onprem, profile, node),
    }


def _infiniband_vars(onprem: OnPrem, profile: HardwareProfile, node: Node) -> dict[str, Any]:
    hcas = profile.hcas
    address = node.ipoib_address if hcas.ipoib and hcas.count else None
    cidr = onprem.ipoib_cidr
    return {
        "net_infiniband_hca_count": hcas.count,
        "net_infiniband_stack": hcas.stack,
        "net_infiniband_install_mode": profile.install_mode,
        "net_infiniband_ipoib_address": f"{address}/{cidr.prefixlen}" if address and cidr else "",
        "net_infiniband_subnet_manager": node.name == onprem.subnet_manager,
        "net_infiniband_package_mirror": onprem.package_mirror or "",
    }


def pin_vars(cluster: Cluster, site: str) -> dict[str, str]:
    """Each pin under its role variable (gpucluster.pins names both), for the pins the site's nodes use."""
    return {
        source.variable: source.version
        for source in pin_sources(cluster)
        if site == "aws" or source.onprem is not None
    }


def image_vars(cluster: Cluster) -> dict[str, Any]:
    """Variables of playbooks/image.yml: every pin, the full GPU stack, and no cluster state at all."""
    aws_groups = [group for group in node_groups(cluster) if group.hardware_profile is None]
    return {
        **pin_vars(cluster, "aws"),
        **_slurm_package_vars(cluster),
        # The image build host builds its own Slurm packages (upstream-release): no rack host is reachable.
        "slurm_common_release_build_host": "",
        "gpu_nvidia_driver_install_mode": "full",
        # Every 8-GPU EC2 type this tool launches (p4d, p5, p5e, p5en) joins its GPUs through NVSwitch.
        "gpu_nvidia_driver_nvswitch": any(group.gpu_count >= 8 for group in aws_groups),
        # EFA does GPUDirect RDMA through its own driver; nvidia-peermem is for InfiniBand HCAs.
        "gpu_nvidia_driver_peermem": False,
        "gpu_nvidia_driver_rdma_stack": "rdma-core",
        "gpu_cuda_toolkit_install_mode": "full",
        "gpu_dcgm_install_mode": "full",
        "gpu_dcgm_cuda_version": cluster.versions.cuda,
        "gpu_dcgm_job_mapping_dir": names.DCGM_JOB_MAPPING_DIR,
        "gpu_nccl_cuda_version": cluster.versions.cuda,
        "gpu_nccl_install_mode": "full",
        "monitoring_node_exporter_enabled": cluster.monitoring.enabled,
    }
