"""Baseline for bench/synth.py: a bare one-stack CDK app with a single p5 launch template."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

app = cdk.App()
stack = cdk.Stack(app, "Bare", env=cdk.Environment(region="us-east-1"))
ec2.LaunchTemplate(
    stack,
    "P5",
    instance_type=ec2.InstanceType("p5.48xlarge"),
    machine_image=ec2.MachineImage.from_ssm_parameter(
        "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
    ),
    require_imdsv2=True,
)
app.synth()
