"""EC2's spot and instance events into an SQS queue that the controller's reconciler drains.

The backstop for a node whose spot agent is dead or cut off; gpucluster.power.spot_events acts on them.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from gpucluster.power.spot_events import DETAIL_TYPES
from stacks.parts.acks import acknowledge
from stacks.parts.encryption_key import EncryptionKey


class SpotEvents(Construct):
    """A KMS-encrypted, TLS-only queue with a dead-letter queue, fed by one EventBridge rule."""

    def __init__(self, scope: Construct, id_: str, *, queue_name: str) -> None:
        super().__init__(scope, id_)
        # Events are worth minutes: nothing to keep when the stack goes.
        self.key = EncryptionKey(
            self, "Key", alias=None, description=queue_name, removal_policy=cdk.RemovalPolicy.DESTROY
        ).key
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=self.key,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(4),
        )
        acknowledge(
            self.dead_letters,
            {
                "AwsSolutions::AwsSolutions-SQS3": (
                    "This is the dead-letter queue of the spot events queue; it needs none of its own."
                )
            },
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=self.key,
            enforce_ssl=True,
            # A notice is worth its two minutes; a day covers a controller that was down for a while.
            retention_period=cdk.Duration.days(1),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=5, queue=self.dead_letters),
        )
        self.rule = events.Rule(
            self,
            "Rule",
            description="EC2 spot interruption warnings, rebalance recommendations and state changes",
            event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=list(DETAIL_TYPES)),
            targets=[targets.SqsQueue(self.queue)],
        )
        # The target's grant lets EventBridge send; only this rule may (no other rule of the account).
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                conditions={"ArnNotEquals": {"aws:SourceArn": self.rule.rule_arn}},
            )
        )
        # EventBridge encrypts what it sends with the queue's key.
        self.key.grant(iam.ServicePrincipal("events.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
