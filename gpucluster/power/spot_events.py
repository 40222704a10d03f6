"""The controller's backstop for spot nodes whose agent is dead or cut off: EC2's events, from SQS.

EventBridge delivers spot interruption warnings, rebalance recommendations and instance state changes of
the account to the cluster's queue (stack: stacks/parts/spot_events.py). Each reconciler pass drains it:
an interruption warning drains the node and signals its jobs (what the node's agent would have done), a
rebalance recommendation drains it, a stopping or ending instance sets its node DOWN so its jobs requeue
at once. A message is deleted once acted on, so each event acts once; events for instances of other
clusters are dropped, and so are events for an instance of a node's earlier power-up: EC2 sends an
instance's "terminated" minutes after its notice, when the node may already run a new instance and a
requeued job. https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpucluster.names import POWER_REASON
from gpucluster.power import fleet
from gpucluster.power.resume_marks import of_power_up
from gpucluster.power.slurm import Slurm

if TYPE_CHECKING:
    from types_boto3_sqs import SQSClient

INTERRUPTION = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
DETAIL_TYPES = (INTERRUPTION, REBALANCE, STATE_CHANGE)
ENDED_STATES = ("stopping", "stopped", "shutting-down", "terminated")
MAX_BATCHES = 20  # 200 events a pass at most; the rest wait for the next pass
REASON_PREFIX = POWER_REASON  # with "spot ", the reconciler's sign that a drain is ours


@dataclass(frozen=True)
class Event:
    """One EC2 event as EventBridge delivers it."""

    kind: str  # its detail-type
    instance_id: str
    time: str
    state: str = ""  # state changes only

    @classmethod
    def parse(cls, body: str) -> Event | None:
        """The event in a message body; None for anything else (dropped)."""
        try:
            data: dict[str, Any] = json.loads(body)
            detail = data["detail"]
            return cls(str(data["detail-type"]), str(detail["instance-id"]), str(data.get("time", "")),
                       str(detail.get("state", "")))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None


def act(event: Event, node: str, slurm: Slurm, signal: str) -> str | None:
    """Tell Slurm what the event means for the node; a log line, or None when it means nothing."""
    if event.kind == INTERRUPTION:
        slurm.drain([node], f"{REASON_PREFIX}spot interruption warning at {event.time} (EventBridge)")
        slurm.signal_jobs(node, signal)
        return f"{node} ({event.instance_id}): interruption at {event.time}: drained, jobs sent SIG{signal}"
    if event.kind == REBALANCE:
        slurm.drain([node], f"{REASON_PREFIX}spot rebalance recommendation at {event.time} (EventBridge)")
        return f"{node} ({event.instance_id}): rebalance recommendation at {event.time}: drained"
    if event.kind == STATE_CHANGE and event.state in ENDED_STATES:
        slurm.set_down([node], f"{REASON_PREFIX}instance {event.instance_id} {event.state}")
        return f"{node} ({event.instance_id}): {event.state}: DOWN, its jobs requeue"
    return None


def current_nodes(
    instances: list[fleet.Instance], resumed: dict[str, float], slack_s: float
) -> dict[str, str]:
    """Instance id → node, for each node's instance of its current power-up only.

    resumed: node → epoch seconds of its last resume (gpucluster.power.resume_marks). An instance launched
    before it belongs to an earlier power-up; without a mark, the node's newest instance is its own.
    """
    newest: dict[str, fleet.Instance] = {}
    for instance in instances:
        if instance.node and (
            instance.node not in newest or instance.launched > newest[instance.node].launched
        ):
            newest[instance.node] = instance
    current: dict[str, str] = {}
    for instance in instances:
        if not instance.node:
            continue
        mark = resumed.get(instance.node)
        own = (
            instance is newest[instance.node]
            if mark is None
            else of_power_up(instance.launched, mark, slack_s)
        )
        if own:
            current[instance.id] = instance.node
    return current


def consume(
    sqs: SQSClient,
    queue_url: str,
    instances: list[fleet.Instance],
    slurm: Slurm,
    signal: str,
    *,
    resumed: dict[str, float] | None = None,
    slack_s: float = 5.0,
) -> list[str]:
    """Drain the queue (bounded), act on each event of this cluster's current instances; the log lines."""
    nodes = current_nodes(instances, resumed or {}, slack_s)
    lines: list[str] = []
    for _ in range(MAX_BATCHES):
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60
        ).get("Messages", [])
        if not messages:
            break
        for message in messages:
            event = Event.parse(message.get("Body", ""))
            node = nodes.get(event.instance_id) if event else None
            if event is not None and node is not None:
                line = act(event, node, slurm, signal)
                if line:
                    lines.append(line)
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return lines
