"""Alerts stack intent: encrypted topic, spot/rebalance and scaling events, budget thresholds."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match

from tests.stacks.conftest import Synth


def test_topic_is_kms_encrypted_and_tls_only(example_synth: Synth) -> None:
    template = example_synth.template("Alerts")
    template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [Match.any_value(), "Arn"]}}
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            }
        },
    )


def _allowed_services(statements: list[dict[str, Any]], action: str) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if (
            statement["Effect"] == "Allow"
            and action in actions
            and "Service" in statement.get("Principal", {})
        ):
            services = statement["Principal"]["Service"]
            found |= set(services if isinstance(services, list) else [services])
    return found


def test_services_may_publish_through_the_key(example_synth: Synth) -> None:
    template = example_synth.template("Alerts")
    (policy,) = template.find_resources("AWS::SNS::TopicPolicy").values()
    (key,) = template.find_resources("AWS::KMS::Key").values()
    publishers = {"events.amazonaws.com", "budgets.amazonaws.com"}
    assert _allowed_services(policy["Properties"]["PolicyDocument"]["Statement"], "sns:Publish") == publishers
    key_statements = key["Properties"]["KeyPolicy"]["Statement"]
    assert _allowed_services(key_statements, "kms:GenerateDataKey*") == publishers
    assert _allowed_services(key_statements, "kms:Decrypt") == publishers


def test_spot_interruption_and_rebalance_events_reach_the_topic(example_synth: Synth) -> None:
    template = example_synth.template("Alerts")
    (topic,) = template.find_resources("AWS::SNS::Topic")
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.ec2"],
                "detail-type": [
                    "EC2 Spot Instance Interruption Warning",
                    "EC2 Instance Rebalance Recommendation",
                ],
            },
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Ref": topic}})],
        },
    )


def test_no_auto_scaling_rule_remains(example_synth: Synth) -> None:
    # Failed launches are the ResumeProgram's to report: it sets the nodes DOWN with EC2's error code.
    rules = example_synth.template("Alerts").find_resources("AWS::Events::Rule")
    assert all("aws.autoscaling" not in str(r["Properties"]["EventPattern"]) for r in rules.values())


def test_budget_has_one_alert_per_threshold(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None and aws.budget is not None
    (budget,) = example_synth.template("Alerts").find_resources("AWS::Budgets::Budget").values()
    props = budget["Properties"]
    assert props["Budget"]["BudgetLimit"] == {"Amount": aws.budget.monthly_limit_usd, "Unit": "USD"}
    assert props["Budget"]["TimeUnit"] == "MONTHLY"
    thresholds = [n["Notification"]["Threshold"] for n in props["NotificationsWithSubscribers"]]
    assert thresholds == aws.budget.alert_thresholds_pct


def test_budget_emails_are_subscribed(networked_synth: Synth) -> None:
    (budget,) = networked_synth.template("Alerts").find_resources("AWS::Budgets::Budget").values()
    for notification in budget["Properties"]["NotificationsWithSubscribers"]:
        assert {"SubscriptionType": "EMAIL", "Address": "finance@example.com"} in notification["Subscribers"]


def test_interruption_emails_subscribe_to_the_topic(cloud_only_synth: Synth) -> None:
    aws = cloud_only_synth.cluster.aws
    assert aws is not None and aws.interruption_emails
    template = cloud_only_synth.template("Alerts")
    for email in aws.interruption_emails:
        template.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": email})
    template.resource_count_is("AWS::Budgets::Budget", 0)
