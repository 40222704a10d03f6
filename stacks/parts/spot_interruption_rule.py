"""EventBridge rule: spot interruption warnings and rebalance advice to the topic."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sns as sns
from constructs import Construct

EC2_DETAIL_TYPES = ("EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation")


class SpotInterruptionRule(Construct):
    """Deliver spot interruption and rebalance events to SNS.

    EC2 spot events carry only the instance id, so the rule covers the account and region. A failed
    launch needs no rule: the ResumeProgram sets the nodes DOWN with EC2's error as the reason.
    """

    def __init__(self, scope: Construct, id_: str, *, topic: sns.ITopic) -> None:
        super().__init__(scope, id_)
        self.spot_rule = events.Rule(
            self,
            "Spot",
            description="EC2 spot interruption warnings and rebalance recommendations",
            event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=list(EC2_DETAIL_TYPES)),
            targets=[targets.SnsTopic(topic)],
        )
