"""The reconciler's backstop: EC2's spot and instance events from the cluster's SQS queue (moto), acted on
once each, for this cluster's instances only."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from gpucluster.power import fleet, spot_events
from gpucluster.power.reconcile import reconcile
from tests.power.conftest import Aws, RecordingSlurm


def _launch(aws: Aws, node: str) -> str:
    image = aws.ec2.describe_images()["Images"][0]["ImageId"]
    (instance,) = aws.ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        SubnetId=aws.subnet,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "gpucluster:cluster", "Value": aws.cfg.cluster},
                    {"Key": "gpucluster:node", "Value": node},
                ],
            }
        ],
    )["Instances"]
    instance_id: str = instance["InstanceId"]
    return instance_id


def _event(kind: str, instance_id: str, **detail: str) -> str:
    """An EC2 event as EventBridge delivers it to an SQS target (the message body is the event)."""
    return json.dumps(
        {
            "version": "0",
            "detail-type": kind,
            "source": "aws.ec2",
            "time": "2026-12-04T10:00:00Z",
            "region": "us-east-1",
            "resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, **detail},
        }
    )


def _queue(aws: Aws) -> tuple[Any, str]:
    sqs = boto3.client("sqs", region_name=aws.cfg.region)
    assert aws.cfg.events_queue is not None  # the example has a spot group
    url: str = sqs.create_queue(QueueName=aws.cfg.events_queue)["QueueUrl"]
    return sqs, url


def test_each_event_acts_once_on_the_node_of_its_instance(aws: Aws, slurm: RecordingSlurm) -> None:
    sqs, url = _queue(aws)
    first, second, third = (_launch(aws, f"p5-spot-{n}") for n in (1, 2, 3))
    stranger = "i-0ffffffffffffffff"  # another cluster's instance in the same account
    for body in (
        _event(spot_events.INTERRUPTION, first, **{"instance-action": "terminate"}),
        _event(spot_events.REBALANCE, second),
        _event(spot_events.STATE_CHANGE, third, state="shutting-down"),
        _event(spot_events.STATE_CHANGE, third, state="running"),
        _event(spot_events.INTERRUPTION, stranger, **{"instance-action": "terminate"}),
        "not an event",
    ):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    instances = fleet.describe(aws.ec2, aws.cfg)
    lines = spot_events.consume(sqs, url, instances, slurm, "USR1")
    assert [nodes for nodes, _ in slurm.drained] == [["p5-spot-1"], ["p5-spot-2"]]
    assert "spot interruption warning at 2026-12-04T10:00:00Z" in slurm.drained[0][1]
    assert slurm.signalled == [("p5-spot-1", "USR1")]
    assert slurm.down == [(["p5-spot-3"], f"gpucluster: instance {third} shutting-down")]
    assert len(lines) == 3
    # Every message is gone (acted on or dropped): a second pass does nothing.
    assert spot_events.consume(sqs, url, instances, slurm, "USR1") == []
    assert len(slurm.drained) == 2 and len(slurm.signalled) == 1


def test_a_failed_action_leaves_the_event_for_the_next_pass(aws: Aws, slurm: RecordingSlurm) -> None:
    sqs, url = _queue(aws)
    instance = _launch(aws, "p5-spot-1")
    sqs.send_message(QueueUrl=url, MessageBody=_event(spot_events.REBALANCE, instance))

    class Unreachable(RecordingSlurm):
        def drain(self, nodes: list[str], reason: str) -> None:
            raise OSError("slurmctld not responding")

    with pytest.raises(OSError, match="not responding"):
        spot_events.consume(sqs, url, fleet.describe(aws.ec2, aws.cfg), Unreachable(), "USR1")
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert int(attributes["ApproximateNumberOfMessagesNotVisible"]) == 1  # back after its visibility timeout


def test_the_reconciler_reads_the_queue_every_pass(aws: Aws, slurm: RecordingSlurm) -> None:
    sqs, url = _queue(aws)
    instance = _launch(aws, "p5-spot-1")
    sqs.send_message(QueueUrl=url, MessageBody=_event(spot_events.REBALANCE, instance))
    decided = reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, sqs=sqs)
    assert slurm.drained and decided.events and decided.lines()[0].startswith("event: p5-spot-1")
