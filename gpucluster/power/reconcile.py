"""The reconciler: make EC2 agree with Slurm, every period, from both sides' current state.

slurmctld's view wins: an instance runs only for a node Slurm has powered up. Instances are read before
node states, so an instance seen here was launched before the states were read: a node that reads
powered down then truly does not want it. The reconciler remembers nothing between runs (it reads the
ResumeProgram's per-node marks, gpucluster.power.resume_marks), so a controller restart loses nothing
(https://slurm.schedmd.com/power_save.html; ParallelCluster's clustermgtd does the same).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpucluster import names
from gpucluster.power import config, fleet, spot_events, targets
from gpucluster.power.log import log
from gpucluster.power.resume import clients, load_config, sqs_client
from gpucluster.power.resume_marks import ResumeMarks, of_power_up
from gpucluster.power.slurm import NodeState, Scontrol, Slurm

if TYPE_CHECKING:
    from types_boto3_ec2 import EC2Client
    from types_boto3_sqs import SQSClient

# An instance without its node tag is young: the ResumeProgram tags right after CreateFleet returns.
UNTAGGED_GRACE_S = 300
# EC2's LaunchTime and this host's clock (chrony-synced) may differ a little; a previous power-up's
# instance is older than its resume by far more (its node ran, went DOWN and was powered down between).
LAUNCH_CLOCK_SLACK_S = 5
REASON_PREFIX = names.POWER_REASON
SPOT_DRAIN = REASON_PREFIX + "spot "  # the reasons the spot agent and the events backstop drain with
HEALTH_DRAIN = names.HEALTH_REASON  # the node's own health program drained it (gpucluster.health)
OUR_DRAINS = (SPOT_DRAIN, HEALTH_DRAIN)
CAPACITY_ERRORS = ("InsufficientInstanceCapacity", "InstanceLimitExceeded", "VcpuLimitExceeded",
                   "MaxSpotInstanceCountExceeded", "InsufficientCapacity", "UnfulfillableCapacity",
                   "group unavailable", names.MAX_COUNT_REFUSAL)  # fmt: skip


@dataclass
class Plan:
    """What one pass decided: instances to terminate (id → why), nodes to set DOWN and to return."""

    terminate: dict[str, str] = field(default_factory=dict)
    down: dict[str, str] = field(default_factory=dict)  # node → reason
    power_down: list[str] = field(default_factory=list)  # DOWN nodes returned to POWERED_DOWN
    power_up: list[str] = field(default_factory=list)  # static nodes found powered down
    undrain: list[str] = field(default_factory=list)  # powered down, still drained for a spot notice
    replace: dict[str, str] = field(default_factory=dict)  # idle, drained by its health check → power down
    events: list[str] = field(default_factory=list)  # what EC2's queued events did (spot_events)
    targets: list[str] = field(default_factory=list)  # Prometheus target files written or removed

    def lines(self) -> list[str]:
        """One log line per decision."""
        return [
            *(f"event: {line}" for line in self.events),
            *(f"terminate {i}: {why}" for i, why in sorted(self.terminate.items())),
            *(f"down {n}: {why}" for n, why in sorted(self.down.items())),
            *(f"return {n} to powered down" for n in sorted(self.power_down)),
            *(f"power up static node {n}" for n in sorted(self.power_up)),
            *(f"clear the drain of powered-down {n}" for n in sorted(self.undrain)),
            *(f"replace {n}: power down ({why})" for n, why in sorted(self.replace.items())),
            *self.targets,
        ]


def plan(
    cfg: config.PowerConfig,
    instances: list[fleet.Instance],
    nodes: dict[str, NodeState],
    now: float,
    resumed: dict[str, float] | None = None,
) -> Plan:
    """Decide, without side effects, from the instances (read first) and the node states.

    resumed: node → when its current power-up began (ResumeMarks.since; infinity: not yet resumed again).
    """
    result = Plan()
    live, gone = _by_node(cfg, instances, now, result)
    for name, own in live.items():
        _plan_instances(name, own, nodes.get(name), result)
    for name, node in nodes.items():
        if cfg.group_of(name) is not None:
            ended = _this_power_up(gone.get(name, []), (resumed or {}).get(name))
            _plan_node(cfg, node, live=live.get(name, []), gone=ended, now=now, result=result)
    return result


def _this_power_up(gone: list[fleet.Instance], resumed: float | None) -> list[fleet.Instance]:
    """The ended instances launched since the node's last resume (EC2 lists ended ones for an hour).

    Without this, a node resumed again under its old name would go DOWN for its previous instance's
    end while its new one is still being launched, and requeue its job a second time.
    """
    if resumed is None:
        return []  # no mark: only ResumeTimeout judges this boot
    return [i for i in gone if of_power_up(i.launched, resumed, LAUNCH_CLOCK_SLACK_S)]


def _by_node(
    cfg: config.PowerConfig, instances: list[fleet.Instance], now: float, result: Plan
) -> tuple[dict[str, list[fleet.Instance]], dict[str, list[fleet.Instance]]]:
    """Live and ended instances per node name; instances no node of this cluster claims are reaped."""
    live: dict[str, list[fleet.Instance]] = defaultdict(list)
    gone: dict[str, list[fleet.Instance]] = defaultdict(list)
    for instance in instances:
        if instance.node is None or cfg.group_of(instance.node) is None:
            young = instance.node is None and now - instance.launched <= UNTAGGED_GRACE_S
            if instance.live and not young:
                result.terminate[instance.id] = f"no node of {cfg.cluster} is {instance.node or '(untagged)'}"
            continue
        (live if instance.live else gone)[instance.node].append(instance)
    return live, gone


def _plan_instances(name: str, own: list[fleet.Instance], node: NodeState | None, result: Plan) -> None:
    """A node's live instances: none when it is off or DOWN, one (the registered one) when it is on."""
    if node is None or node.powered_down or node.powering_down or node.down:
        why = f"{name} is DOWN" if node is not None and node.down else f"{name} is powered down"
        for instance in own:
            result.terminate[instance.id] = why
    elif len(own) > 1:
        # Keep the instance the node registered from (NodeAddr), else the newest.
        keep = next((i for i in own if i.address == node.address), max(own, key=lambda i: i.launched))
        for instance in own:
            if instance is not keep:
                result.terminate[instance.id] = f"{name} runs on {keep.id}"


def _plan_node(
    cfg: config.PowerConfig,
    node: NodeState,
    *,
    live: list[fleet.Instance],
    gone: list[fleet.Instance],
    now: float,
    result: Plan,
) -> None:
    """A cloud node without its instance goes DOWN (jobs requeue); a DOWN one without any comes back."""
    if node.down:
        if not live and _may_return(cfg, node, now):
            result.power_down.append(node.name)
    elif node.powered_down and not live and "DRAIN" in node.flags and node.reason.startswith(OUR_DRAINS):
        # Its instance is gone (the spot notice, or powered down for a failed health check); a new one must
        # be free to take the name. An operator's drain (any other reason) stays.
        result.undrain.append(node.name)
    elif (
        node.up
        and live
        and node.state == "IDLE"
        and "DRAIN" in node.flags
        and node.reason.startswith(HEALTH_DRAIN)
    ):
        # Its health check failed and its jobs are done: power it down (the SuspendProgram ends the instance),
        # so the next job that needs the node powers up a new one. Never while powering up (not `up`).
        result.replace[node.name] = node.reason
    elif node.powered_down and not node.powering_down and _static(cfg, node.name):
        result.power_up.append(node.name)
    elif node.up and not live:
        result.down[node.name] = f"{REASON_PREFIX}instance gone (spot reclaimed or terminated out of band)"
    elif node.powering_up and not live and gone:
        ended = max(gone, key=lambda i: i.launched)
        result.down[node.name] = f"{REASON_PREFIX}instance {ended.id} {ended.state} while booting"


def _static(cfg: config.PowerConfig, name: str) -> bool:
    group = cfg.group_of(name)
    return group is not None and group.static(name)


def _may_return(cfg: config.PowerConfig, node: NodeState, now: float) -> bool:
    """A capacity error waits out the unavailable window (so jobs go elsewhere); anything else returns."""
    capacity = node.reason.startswith(REASON_PREFIX) and any(code in node.reason for code in CAPACITY_ERRORS)
    return not capacity or node.reason_time is None or now - node.reason_time >= cfg.unavailable_seconds


def reconcile(
    cfg: config.PowerConfig,
    *,
    ec2: EC2Client,
    slurm: Slurm,
    sqs: SQSClient | None = None,
    now: float | None = None,
    targets_dir: Path = Path(names.PROMETHEUS_CLOUD_TARGETS),
) -> Plan:
    """One pass: read instances, act on queued EC2 events, read nodes; terminate, set DOWN, return.

    Then the Prometheus targets in targets_dir follow the instances left running (gpucluster.power.targets).
    """
    instances = fleet.describe(ec2, cfg)
    marks = ResumeMarks(cfg.state_dir)
    events: list[str] = []
    if sqs is not None and cfg.events_queue:
        queue_url = sqs.get_queue_url(QueueName=cfg.events_queue)["QueueUrl"]
        tagged = {i.node for i in instances if i.node}
        marked = {n: t for n in tagged if (t := marks.since(n)) is not None}
        events = spot_events.consume(
            sqs,
            queue_url,
            instances,
            slurm,
            cfg.checkpoint_signal,
            resumed=marked,
            slack_s=LAUNCH_CLOCK_SLACK_S,
        )
    nodes = slurm.nodes()
    # Read again, after the node states: a ResumeProgram may have marked a node since the events' read.
    resumed = {n: t for n in nodes if (t := marks.since(n)) is not None}
    decided = plan(cfg, instances, nodes, time.time() if now is None else now, resumed)
    fleet.terminate_ids(ec2, sorted(decided.terminate))
    for name, reason in sorted(decided.down.items()):
        slurm.set_down([name], reason)
    slurm.power_down(sorted(decided.power_down))
    slurm.power_down(sorted(decided.replace))
    slurm.power_up(sorted(decided.power_up))
    slurm.resume(sorted(decided.undrain))
    decided.events = events
    decided.targets = targets.sync(targets_dir, targets.wanted(cfg, instances, set(decided.terminate)))
    return decided


def main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-reconcile (run by gpucluster-reconcile.timer on the controller)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        print("usage: gpucluster-reconcile", file=sys.stderr)
        return 2
    cfg = load_config()
    ec2, _ = clients(cfg)
    sqs = sqs_client(cfg) if cfg.events_queue else None
    for line in reconcile(cfg, ec2=ec2, slurm=Scontrol(), sqs=sqs).lines():
        print(line)
        log(cfg.state_dir, "gpucluster-reconcile", line)
    return 0
