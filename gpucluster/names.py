"""Names derived from a cluster: stacks, AWS resources, Slurm cloud nodes and Ansible groups.

Each name is made here once; stacks, roles (through the inventory), the renderer and the review read
it from here, so a renamed resource cannot leave one consumer looking for the old name.
"""

from __future__ import annotations

from typing import Final

# Ansible groups the playbooks target (ansible/playbooks/*.yml name the same strings).
SLURM_CONTROLLER_GROUP: Final = "slurm_controller"
SLURM_ACCOUNTING_GROUP: Final = "slurm_accounting"
SLURM_COMPUTE_GROUP: Final = "slurm_compute"
ONPREM_SITE_GROUP: Final = "site_onprem"
SERVICE_HOSTS_GROUP: Final = "service_hosts"
SUBNET_MANAGER_GROUP: Final = "infiniband_subnet_manager"


def stack_name(cluster_name: str, unit: str) -> str:
    """CloudFormation stack name of one deployment unit, e.g. `gpucluster-example-network`."""
    return f"gpucluster-{cluster_name}-{unit}"


def checkpoint_key_alias(cluster_name: str) -> str:
    """KMS alias of the checkpoint bucket's key."""
    return f"alias/gpucluster/{cluster_name}/checkpoints"


def munge_key_parameter(cluster_name: str) -> str:
    """SSM SecureString parameter holding the cluster's munge key (base64) for cloud nodes."""
    return f"/gpucluster/{cluster_name}/munge-key"


def munge_key_alias(cluster_name: str) -> str:
    """KMS alias of the key that encrypts the munge key parameter (the capacity stack makes it)."""
    return f"alias/gpucluster/{cluster_name}/munge-key"


def checkpoint_access_parameter(cluster_name: str) -> str:
    """SSM parameter the capacity stack writes for cloud nodes: checkpoint bucket, prefix, writer role."""
    return f"/gpucluster/{cluster_name}/checkpoint-access"


def spot_events_queue(cluster_name: str) -> str:
    """SQS queue (name) where EventBridge puts EC2's spot and instance events for the reconciler."""
    return f"gpucluster-{cluster_name}-spot-events"


def capacity_parameter(cluster_name: str) -> str:
    """SSM parameter the capacity stack writes for the power programs: launch templates and subnets."""
    return f"/gpucluster/{cluster_name}/capacity"


CLUSTER_TAG = "gpucluster:cluster"  # on every resource and instance; the budget filters on it
GROUP_TAG = "gpucluster:group"  # the capacity group of an instance
NODE_TAG = "gpucluster:node"  # the Slurm node name an instance runs as (read by the node over IMDSv2)
ROLE_TAG = "gpucluster:role"  # what a bucket or image is for


def image_ami_parameter(cluster_name: str) -> str:
    """SSM parameter (data type aws:ec2:image) where the image stack publishes the node AMI id."""
    return f"/gpucluster/{cluster_name}/node-ami"


def image_key_alias(cluster_name: str) -> str:
    """KMS alias of the key that encrypts the node image's EBS snapshots."""
    return f"alias/gpucluster/{cluster_name}/node-image"


def image_resource_name(cluster_name: str, part: str) -> str:
    """Name of one Image Builder resource of the node image, e.g. `gpucluster-example-node-recipe`."""
    return f"gpucluster-{cluster_name}-node-{part}"


# The node health program (gpucluster/health/node_program.py), installed by the slurm_node role and baked into
# the cloud image; the rendered Prolog, Epilog and slurm.conf's HealthCheckProgram run it.
HEALTH_PROGRAM = "/usr/local/lib/gpucluster/health.py"
HEALTH_REASON = "gpucluster-health: "  # starts every node reason the health program sets (not POWER_REASON's)
POWER_REASON = "gpucluster: "  # starts every node reason the power programs set (the spot agent's too)
# The ResumeProgram's reason when a mixed group's GPU models together reach its max_count; the reconciler
# keeps such nodes DOWN for the unavailable window, like a capacity error.
MAX_COUNT_REFUSAL = "group at max_count"
POWER_BIN = "/opt/gpucluster/bin"  # the controller's virtual environment of the power programs
POWER_CONFIG = "/etc/gpucluster/power.json"  # what the power programs know, rendered from the cluster file
ROUTING_CONFIG = "/etc/gpucluster/routing.json"  # what the burst controller knows, rendered likewise
ROUTING_UNIT = "gpucluster-routing"  # the burst controller's systemd service and timer
# Prometheus on the controller: cloud nodes are scrape targets only while their instance lives, one file_sd
# file per node in this directory (kept by the reconciler, gpucluster.power.targets); rack nodes are in
# prometheus.yml.
PROMETHEUS_CLOUD_TARGETS = "/etc/prometheus/file_sd/gpucluster-cloud"
PROMETHEUS_RULES = "/etc/prometheus/rules/gpucluster.rules.yml"
# dcgm-exporter's --hpc-job-mapping-dir: Slurm's prolog writes the job IDs on each GPU, one file per GPU
# index, and the exporter labels that GPU's series hpc_job ("allocated" to `gpucluster utilization`).
DCGM_JOB_MAPPING_DIR = "/run/gpucluster/dcgm-job-map"
# Fixed ids so files on shared storage and munge credentials agree on every node (SlurmUser is slurm).
SLURM_UID = 64030
MUNGE_UID = 64031
ROUTING_TAG = "gpucluster-routing:"  # starts the admin comment job_submit.lua writes on each routed job


def power_partition(group: str) -> str:
    """The hidden partition that carries a cloud group's power-saving times in slurm.conf."""
    return f"power-{group}"


def cloud_node_names(group: str, max_count: int) -> list[str]:
    """Slurm node names of a capacity group: one per instance it may grow to."""
    return [f"{group}-{n}" for n in range(1, max_count + 1)]


def rack_group(rack: str) -> str:
    """Ansible group of one rack's nodes, e.g. `rack_rack_a`."""
    return _group("rack", rack)


def profile_group(profile: str) -> str:
    """Ansible group of the nodes of one hardware profile, e.g. `profile_dgx_h100`."""
    return _group("profile", profile)


def _group(kind: str, name: str) -> str:
    return f"{kind}_{name}".replace("-", "_")
