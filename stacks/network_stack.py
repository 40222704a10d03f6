"""Network stack: the cluster VPC and everything that routes traffic for it."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.clusterfile.model.aws import Aws
from stacks.parts.network import ClusterNetwork


class NetworkStack(cdk.Stack):
    """VPC, private GPU subnet, S3 and SSM endpoints, flow logs, optional NAT and VPN."""

    def __init__(self, scope: Construct, id_: str, *, aws: Aws, **kwargs: Any) -> None:
        super().__init__(scope, id_, **kwargs)
        self.network = ClusterNetwork(
            self,
            "Network",
            cidr=aws.vpc_cidr,
            availability_zone=aws.availability_zone,
            egress=aws.egress,
            vpn=aws.vpn,
            image_build=aws.builds_image,
            transit_gateway_id=aws.transit_gateway_id,
            onprem_cidrs=aws.onprem_cidrs,
        )


class NoCloudStack(cdk.Stack):
    """Placeholder for a cluster without an `aws` section: one no-cost resource, nothing to run.

    `cdk synth` fails on an app without stacks; this keeps every cluster file synthesizable.
    """

    def __init__(self, scope: Construct, id_: str, **kwargs: Any) -> None:
        super().__init__(scope, id_, **kwargs)
        cdk.CfnWaitConditionHandle(self, "Nothing")
        cdk.CfnOutput(self, "Note", value="This cluster has no aws section; nothing is deployed to AWS.")
