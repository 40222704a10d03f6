"""Wire a cluster's stacks into an app and register the validation plugins."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

from gpucluster.clusterfile.model import Cluster
from gpucluster.names import stack_name
from stacks.alerts_stack import AlertsStack
from stacks.capacity_stack import CapacityStack
from stacks.checkpoint_stack import CheckpointStack
from stacks.image_stack import ImageStack
from stacks.nag.plugin import GpuClusterChecks
from stacks.network_stack import NetworkStack, NoCloudStack
from stacks.tags import CLUSTER_TAG


@dataclass(frozen=True)
class ClusterStacks:
    """The stacks of one cluster; only `placeholder` when the file has no AWS side."""

    placeholder: NoCloudStack | None = None
    network: NetworkStack | None = None
    checkpoints: CheckpointStack | None = None
    alerts: AlertsStack | None = None
    image: ImageStack | None = None
    capacity: CapacityStack | None = None

    def all(self) -> list[cdk.Stack]:
        """The stacks that exist, in deployment order."""
        return [
            s
            for s in (
                self.placeholder,
                self.network,
                self.checkpoints,
                self.alerts,
                self.image,
                self.capacity,
            )
            if s is not None
        ]


def build(app: cdk.App, cluster: Cluster, *, source: str) -> ClusterStacks:
    """Create the cluster's stacks in `app`; a placeholder when the cluster file has no `aws` section."""
    aws = cluster.aws
    if aws is None:
        return ClusterStacks(
            placeholder=NoCloudStack(app, "NoCloud", stack_name=stack_name(cluster.name, "no-cloud"))
        )
    # Region-bound, account-agnostic: the AZ comes from the model, so synth needs no look-up.
    env = cdk.Environment(region=aws.region)
    cdk.Tags.of(app).add(CLUSTER_TAG, cluster.name)
    network = NetworkStack(app, "Network", stack_name=stack_name(cluster.name, "network"), env=env, aws=aws)
    checkpoints = None
    if aws.checkpoint is not None:
        checkpoints = CheckpointStack(
            app,
            "Checkpoints",
            stack_name=stack_name(cluster.name, "checkpoints"),
            env=env,
            cluster_name=cluster.name,
            spec=aws.checkpoint,
        )
    alerts = AlertsStack(
        app,
        "Alerts",
        stack_name=stack_name(cluster.name, "alerts"),
        env=env,
        cluster_name=cluster.name,
        aws=aws,
    )
    image = None
    if aws.builds_image:
        image = ImageStack(
            app,
            "Image",
            stack_name=stack_name(cluster.name, "image"),
            env=env,
            cluster=cluster,
            network=network.network,
        )
    capacity = CapacityStack(
        app,
        "Capacity",
        stack_name=stack_name(cluster.name, "capacity"),
        env=env,
        cluster=cluster,
        source=source,
        network=network.network,
        checkpoint=checkpoints.exports if checkpoints else None,
    )
    if checkpoints is not None:
        capacity.add_stack_dependency(checkpoints, "nodes import the checkpoint bucket and key ARNs")
    if image is not None:
        capacity.add_stack_dependency(
            image, "launch templates resolve the AMI parameter the image build publishes"
        )
    return ClusterStacks(
        network=network, checkpoints=checkpoints, alerts=alerts, image=image, capacity=capacity
    )


def add_checks(app: cdk.App) -> None:
    """Register cdk-nag's AWS Solutions and NIST 800-53 r5 packs and our GPU-cluster rule pack."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app), GpuClusterChecks())
