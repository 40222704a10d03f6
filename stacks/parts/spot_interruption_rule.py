"""EventBridge rule: spot interruption warnings, rebalance advice and failed launches to the topic."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sns as sns
from constructs import Construct

EC2_DETAIL_TYPES = ("EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation")
ASG_DETAIL_TYPES = ("EC2 Instance Launch Unsuccessful", "EC2 Instance Terminate Unsuccessful")


class SpotInterruptionRule(Construct):
    """Deliver spot interruption and rebalance events, and the cluster's failed launches, to SNS.

    EC2 spot events carry only the instance id, so the EC2 rule covers the account and region; the
    Auto Scaling rule is narrowed to the cluster's groups by name prefix.
    """

    def __init__(self, scope: Construct, id_: str, *, topic: sns.ITopic, group_prefix: str) -> None:
        super().__init__(scope, id_)
        self.spot_rule = events.Rule(
            self,
            "Spot",
            description="EC2 spot interruption warnings and rebalance recommendations",
            event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=list(EC2_DETAIL_TYPES)),
            targets=[targets.SnsTopic(topic)],
        )
        self.scaling_rule = events.Rule(
            self,
            "Scaling",
            description="Failed launches and terminations of the cluster's Auto Scaling groups",
            event_pattern=events.EventPattern(
                source=["aws.autoscaling"],
                detail_type=list(ASG_DETAIL_TYPES),
                detail={"AutoScalingGroupName": events.Match.prefix(group_prefix)},
            ),
            targets=[targets.SnsTopic(topic)],
        )
