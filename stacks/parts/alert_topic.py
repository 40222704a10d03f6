"""An encrypted SNS topic that EventBridge and AWS Budgets may publish to; the file subscribes emails."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from stacks.parts.encryption_key import EncryptionKey

PUBLISHERS = ("events.amazonaws.com", "budgets.amazonaws.com")


class AlertTopic(Construct):
    """KMS-encrypted, TLS-only SNS topic for spot interruptions, scaling failures and budget alerts."""

    def __init__(self, scope: Construct, id_: str, *, cluster_name: str, emails: list[str]) -> None:
        super().__init__(scope, id_)
        self.key = EncryptionKey(self, "Key", alias=None, description=f"{cluster_name} alert topic").key
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"gpucluster {cluster_name} alerts",
            master_key=self.key,
            enforce_ssl=True,
        )
        for service in PUBLISHERS:
            principal = iam.ServicePrincipal(service)
            self.topic.grant_publish(principal)
            self.key.grant(principal, "kms:Decrypt", "kms:GenerateDataKey*")
        for email in emails:
            self.topic.add_subscription(subs.EmailSubscription(email))
