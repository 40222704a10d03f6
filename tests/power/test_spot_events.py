"""The reconciler's backstop: EC2's spot and instance events from the cluster's SQS queue (moto), acted on
once each, for this cluster's instances only."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from gpucluster.power import fleet, spot_events
from gpucluster.power.reconcile import reconcile
from gpucluster.power.resume_marks import ResumeMarks
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


def _instance(node: str | None, launched: float, ident: str) -> fleet.Instance:
    return fleet.Instance(id=ident, node=node, state="terminated", address="", launched=launched)


def test_only_the_instances_of_a_nodes_current_power_up_are_its_own() -> None:
    earlier, current, untagged = (
        _instance("p5-spot-1", 100.0, "i-1"),
        _instance("p5-spot-1", 500.0, "i-2"),
        _instance(None, 900.0, "i-3"),
    )
    lone = _instance("p5-spot-2", 50.0, "i-4")
    # With the ResumeProgram's mark (at 490), the instance launched before it is an earlier power-up's.
    assert spot_events.current_nodes([earlier, current, untagged, lone], {"p5-spot-1": 490.0}, 5.0) == {
        "i-2": "p5-spot-1",
        "i-4": "p5-spot-2",
    }
    # Without a mark the node's newest instance is its own; a mark just after the launch (clock slack) too.
    assert spot_events.current_nodes([earlier, current], {}, 5.0) == {"i-2": "p5-spot-1"}
    assert spot_events.current_nodes([current], {"p5-spot-1": 503.0}, 5.0) == {"i-2": "p5-spot-1"}


def test_a_late_event_for_a_nodes_earlier_instance_leaves_its_new_power_up_alone(
    aws: Aws, slurm: RecordingSlurm
) -> None:
    sqs, url = _queue(aws)
    instance = _launch(aws, "p5-spot-1")
    launched = aws.ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0][
        "LaunchTime"
    ]
    # EC2 reports the reclaimed instance "terminated" minutes after its notice; by then slurmctld has resumed
    # p5-spot-1 again for the requeued job (the ResumeProgram's mark, a minute later).
    ResumeMarks(aws.cfg.state_dir).mark(["p5-spot-1"], launched.timestamp() + 60)
    sqs.send_message(QueueUrl=url, MessageBody=_event(spot_events.STATE_CHANGE, instance, state="terminated"))
    decided = reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, sqs=sqs)
    assert slurm.down == [] and decided.events == []
    # The message is consumed, not left to act later.
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
