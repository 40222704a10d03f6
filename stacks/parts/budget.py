"""A monthly AWS Budgets cost budget for the cluster's tagged resources, alerting the topic."""

from __future__ import annotations

from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_sns as sns
from constructs import Construct

from gpucluster.clusterfile.model.aws import Budget
from stacks.tags import CLUSTER_TAG


class ClusterBudget(Construct):
    """Monthly cost budget filtered on the cluster tag, one actual-spend alert per threshold."""

    def __init__(
        self, scope: Construct, id_: str, *, cluster_name: str, spec: Budget, topic: sns.ITopic
    ) -> None:
        super().__init__(scope, id_)
        subscribers = [budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=topic.topic_arn)]
        subscribers += [
            budgets.CfnBudget.SubscriberProperty(subscription_type="EMAIL", address=e) for e in spec.emails
        ]
        self.budget = budgets.CfnBudget(
            self,
            "Budget",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_name=f"gpucluster-{cluster_name}",
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=spec.monthly_limit_usd, unit="USD"),
                cost_filters={"TagKeyValue": [f"user:{CLUSTER_TAG}${cluster_name}"]},
            ),
            notifications_with_subscribers=[
                budgets.CfnBudget.NotificationWithSubscribersProperty(
                    notification=budgets.CfnBudget.NotificationProperty(
                        comparison_operator="GREATER_THAN",
                        notification_type="ACTUAL",
                        threshold=pct,
                        threshold_type="PERCENTAGE",
                    ),
                    subscribers=subscribers,
                )
                for pct in spec.alert_thresholds_pct
            ],
        )
