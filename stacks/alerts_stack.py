"""Alerts stack: the alert topic, spot-interruption and scaling events, and the optional budget."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.clusterfile.model.aws import Aws
from stacks.parts.alert_topic import AlertTopic
from stacks.parts.budget import ClusterBudget
from stacks.parts.spot_interruption_rule import SpotInterruptionRule


class AlertsStack(cdk.Stack):
    """Encrypted SNS topic fed by EventBridge (spot, rebalance, failed launches) and AWS Budgets."""

    def __init__(self, scope: Construct, id_: str, *, cluster_name: str, aws: Aws, **kwargs: Any) -> None:
        super().__init__(scope, id_, **kwargs)
        self.alerts = AlertTopic(
            self, "Alerts", cluster_name=cluster_name, emails=list(aws.interruption_emails)
        )
        self.events = SpotInterruptionRule(self, "Events", topic=self.alerts.topic)
        self.budget = None
        if aws.budget is not None:
            self.budget = ClusterBudget(
                self, "Budget", cluster_name=cluster_name, spec=aws.budget, topic=self.alerts.topic
            )
