#!/usr/bin/python
"""Ansible module: reboot slots for a rolling reboot, decided on the Slurm controller under a lock."""

from __future__ import annotations

import fcntl
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: reboot_gate
short_description: Take, use and give back a reboot slot of a Slurm node, on the controller
description:
  - A rolling reboot (a driver change, say) takes nodes out of service a few at a time, and never a node
    that runs jobs. This module, run on the Slurm controller (C(delegate_to)), decides for one node under
    an exclusive lock (C(flock) on I(lock_path)), so two nodes cannot take the last slot at once.
  - A node counts as out for a reboot while its Slurm reason starts with C(gpucluster reboot:) or
    C(gpucluster boot check:) (a failed boot check keeps its slot and so stops the roll), or its state
    carries a C(REBOOT*) flag.
  - C(claim) answers with an I(action). C(go) drains the node with I(reason) (a drain of another reason, an
    operator's or one awaiting acceptance, is kept and reported in I(operator_reason)). C(defer) means the
    node runs jobs and is left as it is; the next run takes it. C(wait) means the cluster (I(max_nodes)) or
    the node's rack (I(max_rack_percent) of I(rack_nodes), at least one) already has as many nodes out as
    allowed; retry. C(direct) means Slurm has no registered node of that name, so nothing runs there and it
    may be rebooted directly. A job that lands between the look and the drain resumes the node and defers it.
  - C(reboot) asks slurmctld to reboot the node once idle (C(scontrol reboot ASAP)), with
    C(nextstate=RESUME) unless I(keep_drain) (an operator's drain and reason survive the reboot).
  - C(back) says whether the node booted after I(since) and slurmctld took it back (C(back)), is still
    C(rebooting), or C(failed) (its boot check set it DOWN, or it is unknown to Slurm). Read-only.
  - C(release) resumes a node drained with our reason when no reboot came of it; any other drain, and a
    node whose reboot slurmctld is carrying out, stay as they are.
  - In check mode C(claim) decides without draining, and C(reboot) and C(release) change nothing.
  - See U(https://slurm.schedmd.com/scontrol.html#OPT_reboot).
version_added: "0.1.0"
author: gpucluster
options:
  verb:
    description: What to do for I(node).
    type: str
    required: true
    choices: [claim, reboot, back, release]
  node:
    description: The Slurm node name (the inventory host name).
    type: str
    required: true
  rack_nodes:
    description: Every node of I(node)'s rack, itself included (C(claim)).
    type: list
    elements: str
    default: []
  max_nodes:
    description: Nodes of the cluster that may be out for a reboot at once (C(claim)).
    type: int
    default: 1
  max_rack_percent:
    description: Percent of a rack that may be out at once, rounded down, at least one node (C(claim)).
    type: int
    default: 25
  reason:
    description:
      - The Slurm reason of the drain (C(claim)) or of the reboot (C(reboot)). Start it with
        C(gpucluster reboot:) so that other nodes count the node as out for a reboot.
    type: str
    default: "gpucluster reboot:"
  keep_drain:
    description: C(reboot) without C(nextstate=RESUME), for a node an operator drained.
    type: bool
    default: false
  since:
    description: Epoch seconds of the reboot request (C(back)); a boot before it is not the reboot.
    type: int
    default: 0
  lock_path:
    description: The lock file every decision holds; the same on every run of the cluster.
    type: path
    default: /run/lock/gpucluster-reboot-gate.lock
notes:
  - Runs C(scontrol) and C(squeue) on the host it runs on; delegate it to the Slurm controller.
"""

EXAMPLES = r"""
- name: Take a reboot slot at the controller, or defer while the node runs jobs
  gpucluster.cluster.reboot_gate:
    verb: claim
    node: "{{ inventory_hostname }}"
    rack_nodes: [n1, n2, n3, n4]
    max_nodes: 2
    max_rack_percent: 25
    reason: "gpucluster reboot: NVIDIA driver 570.172.08 -> 580.126.09"
  delegate_to: ctl
  register: slot
  until: slot.action != 'wait'
  retries: 180
  delay: 10

- name: Ask slurmctld to reboot the node once idle
  gpucluster.cluster.reboot_gate:
    verb: reboot
    node: "{{ inventory_hostname }}"
    reason: "{{ slot.operator_reason or 'gpucluster reboot: NVIDIA driver 570.172.08 -> 580.126.09' }}"
    keep_drain: "{{ slot.operator_reason != '' }}"
  delegate_to: ctl
  register: request

- name: Wait until slurmctld takes the node back
  gpucluster.cluster.reboot_gate:
    verb: back
    node: "{{ inventory_hostname }}"
    since: "{{ request.requested_at }}"
  delegate_to: ctl
  register: back
  until: back.state != 'rebooting'
  retries: 360
  delay: 5
  failed_when: back.state != 'back'

- name: Give the slot back when no reboot came of it
  gpucluster.cluster.reboot_gate:
    verb: release
    node: "{{ inventory_hostname }}"
  delegate_to: ctl
"""

RETURN = r"""
action:
  description: C(claim) only. C(go), C(defer), C(wait) or C(direct) (see the description).
  returned: verb is claim
  type: str
  sample: go
why:
  description: Why, in words, with the node names and counts it went by.
  returned: verb is claim, back or release
  type: str
  sample: a reboot slot is free (0 of 2 out)
drained:
  description: C(claim) drained the node with I(reason) (the slot is this run's to give back).
  returned: verb is claim
  type: bool
operator_reason:
  description: The reason of a drain that is not ours and is kept; empty when there is none.
  returned: verb is claim
  type: str
  sample: bad DIMM B2
requested_at:
  description: Epoch seconds of the reboot request, for I(since) of C(back).
  returned: verb is reboot
  type: int
state:
  description: C(back), C(rebooting) or C(failed).
  returned: verb is back
  type: str
slurm_state:
  description: The node's Slurm state as C(scontrol show node) gives it.
  returned: verb is back and Slurm knows the node
  type: str
  sample: IDLE
released:
  description: The node was resumed.
  returned: verb is release
  type: bool
"""

REBOOT_PREFIX = "gpucluster reboot:"
BOOT_CHECK_PREFIX = "gpucluster boot check:"
OUT_PREFIXES = (REBOOT_PREFIX, BOOT_CHECK_PREFIX)
NOT_REGISTERED = frozenset({"NOT_RESPONDING", "UNKNOWN", "FUTURE", "NO_RESPOND"})

Run = Callable[[Sequence[str]], str]


@dataclass(frozen=True)
class SlurmNode:
    """One line of `scontrol show node -o`: the fields the gate reads."""

    name: str
    state: str
    reason: str
    boot_time: str

    @property
    def flags(self) -> set[str]:
        """State words: IDLE+DRAIN+REBOOT_REQUESTED gives {IDLE, DRAIN, REBOOT_REQUESTED}."""
        return set(self.state.replace("*", "+NO_RESPOND").split("+")) - {""}

    @property
    def rebooting(self) -> bool:
        """Whether slurmctld carries out a reboot of it (a REBOOT_* state flag)."""
        return any(flag.startswith("REBOOT") for flag in self.flags)

    @property
    def out_for_reboot(self) -> bool:
        """Out of service for a reboot of ours, or for a boot check it failed."""
        return self.reason.startswith(OUT_PREFIXES) or self.rebooting

    @property
    def kept_drain(self) -> bool:
        """Drained for another reason (an operator's, or awaiting acceptance): it stays after the reboot."""
        return "DRAIN" in self.flags and not self.reason.startswith(OUT_PREFIXES)


@dataclass(frozen=True)
class Request:
    """The module's options for one node."""

    node: str
    rack_nodes: tuple[str, ...] = ()
    max_nodes: int = 1
    max_rack_percent: int = 25
    reason: str = REBOOT_PREFIX
    keep_drain: bool = False
    since: int = 0
    check_mode: bool = False


def parse_nodes(text: str) -> dict[str, SlurmNode]:
    """`scontrol show node -o` output, one node per line; Reason is last and may hold spaces."""
    nodes = {}
    for line in text.splitlines():
        head, _, reason = line.partition(" Reason=")
        fields = dict(re.findall(r"(\w+)=(\S*)", head))
        if "NodeName" not in fields:
            continue
        reason = re.sub(r" \[[^\]]*@[^\]]*\]$", "", reason.strip())  # " [root@2026-…]" who set it
        nodes[fields["NodeName"]] = SlurmNode(
            fields["NodeName"], fields.get("State", ""), reason, fields.get("BootTime", "")
        )
    return nodes


def rack_allowance(rack_size: int, percent: int) -> int:
    """Nodes of a rack that may be out at once: the percentage rounded down, at least one."""
    return max(1, rack_size * percent // 100)


def decide(node: str, nodes: dict[str, SlurmNode], jobs: list[str], request: Request) -> tuple[str, str]:
    """(action, why) for one node before any change is made."""
    me = nodes.get(node)
    if me is None or me.flags & NOT_REGISTERED or ("DOWN" in me.flags and not me.out_for_reboot):
        return "direct", f"{node} is not a registered Slurm node ({me.state if me else 'unknown to Slurm'})"
    if me.out_for_reboot:
        return "go", f"{node} already holds a reboot slot ({me.reason or me.state})"
    if jobs:
        return "defer", f"{node} runs job(s) {','.join(jobs)}; the next run takes it"
    out = sorted(n.name for n in nodes.values() if n.out_for_reboot and n.name != node)
    if len(out) >= request.max_nodes:
        return (
            "wait",
            f"{len(out)} of at most {request.max_nodes} nodes are out for a reboot: {', '.join(out)}",
        )
    rack = request.rack_nodes
    percent = request.max_rack_percent
    allowed = rack_allowance(len(rack), percent)
    rack_out = [n for n in out if n in rack]
    if len(rack_out) >= allowed:
        return "wait", (
            f"{len(rack_out)} of at most {allowed} nodes of its rack ({percent} % of {len(rack)}) "
            f"are out for a reboot: {', '.join(rack_out)}"
        )
    return "go", f"a reboot slot is free ({len(out)} of {request.max_nodes} out)"


def _scontrol_nodes(run: Run) -> dict[str, SlurmNode]:
    return parse_nodes(run(["scontrol", "show", "node", "-o"]))


def _jobs(run: Run, node: str) -> list[str]:
    return run(["squeue", "--noheader", f"--nodelist={node}", "--format=%A"]).split()


def claim(request: Request, run: Run) -> dict[str, Any]:
    """Decide and, for go, drain the node (an operator's drain stays); a job that slipped in defers it."""
    node = request.node
    nodes = _scontrol_nodes(run)
    action, why = decide(node, nodes, _jobs(run, node), request)
    me = nodes.get(node)
    answer: dict[str, Any] = {"action": action, "why": why, "drained": False, "operator_reason": ""}
    if action != "go" or me is None or me.out_for_reboot:
        return answer
    if me.kept_drain:
        answer["operator_reason"] = me.reason
        return answer
    answer["drained"] = True
    if request.check_mode:
        return answer
    run(["scontrol", "update", f"nodename={node}", "state=DRAIN", f"reason={request.reason}"])
    jobs = _jobs(run, node)  # a job scheduled between the look and the drain keeps the node
    if jobs:
        run(["scontrol", "update", f"nodename={node}", "state=RESUME"])
        answer.update(action="defer", drained=False, why=f"{node} took job(s) {','.join(jobs)}")
    return answer


def reboot(request: Request, run: Run) -> dict[str, Any]:
    """Ask slurmctld to reboot the node once idle; an operator's drain and reason survive the reboot."""
    command = ["scontrol", "reboot", "ASAP"]
    if not request.keep_drain:
        command.append("nextstate=RESUME")
    if not request.check_mode:
        run([*command, f"reason={request.reason}", request.node])
    return {"requested_at": int(time.time())}


def back(request: Request, run: Run) -> dict[str, Any]:
    """back: booted after `since` with no reboot flag left; failed: its boot check took it DOWN."""
    me = _scontrol_nodes(run).get(request.node)
    if me is None:
        return {"state": "failed", "why": f"{request.node} is unknown to Slurm"}
    if me.reason.startswith(BOOT_CHECK_PREFIX):
        return {"state": "failed", "why": me.reason, "slurm_state": me.state}
    booted = _epoch(me.boot_time)
    described = f"{me.state}, booted {me.boot_time}"
    if (
        booted is None
        or booted < request.since
        or me.rebooting
        or me.flags & NOT_REGISTERED
        or "DOWN" in me.flags
    ):
        return {"state": "rebooting", "why": described, "slurm_state": me.state}
    return {"state": "back", "why": described, "slurm_state": me.state}


def release(request: Request, run: Run) -> dict[str, Any]:
    """Resume a node drained for a reboot that is not coming; any other drain (an operator's) stays."""
    me = _scontrol_nodes(run).get(request.node)
    if me is None or not me.reason.startswith(REBOOT_PREFIX) or me.rebooting:
        held = me.reason if me else "unknown to Slurm"
        return {"released": False, "why": f"{request.node} holds no idle reboot slot ({held})"}
    if not request.check_mode:
        run(["scontrol", "update", f"nodename={request.node}", "state=RESUME"])
    return {"released": True, "why": f"{request.node} resumed: {me.reason} needs no reboot"}


def _epoch(slurm_time: str) -> int | None:
    try:
        return int(time.mktime(time.strptime(slurm_time, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


VERBS: dict[str, Callable[[Request, Run], dict[str, Any]]] = {
    "claim": claim,
    "reboot": reboot,
    "back": back,
    "release": release,
}


def changed(verb: str, answer: dict[str, Any]) -> bool:
    """A drain, a reboot request or a resume changes the cluster; `back` only reads."""
    return {
        "claim": bool(answer.get("drained")),
        "reboot": True,
        "back": False,
        "release": bool(answer.get("released")),
    }[verb]


def decide_locked(verb: str, request: Request, run: Run, lock_path: str) -> dict[str, Any]:
    """Run one verb holding the lock, so no other node decides between this one's look and its drain."""
    with open(lock_path, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return VERBS[verb](request, run)


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "verb": {"type": "str", "required": True, "choices": list(VERBS)},
    "node": {"type": "str", "required": True},
    "rack_nodes": {"type": "list", "elements": "str", "default": []},
    "max_nodes": {"type": "int", "default": 1},
    "max_rack_percent": {"type": "int", "default": 25},
    "reason": {"type": "str", "default": REBOOT_PREFIX},
    "keep_drain": {"type": "bool", "default": False},
    "since": {"type": "int", "default": 0},
    "lock_path": {"type": "path", "default": "/run/lock/gpucluster-reboot-gate.lock"},
}


def main() -> None:
    """Run the verb the task asks for and return its answer."""
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params

    def run(argv: Sequence[str]) -> str:
        rc, out, err = module.run_command(list(argv))
        if rc != 0:
            module.fail_json(msg=f"{' '.join(argv)} failed ({rc}): {err.strip() or out.strip()}", rc=rc)
        return str(out)

    request = Request(
        node=params["node"],
        rack_nodes=tuple(params["rack_nodes"]),
        max_nodes=params["max_nodes"],
        max_rack_percent=params["max_rack_percent"],
        reason=params["reason"],
        keep_drain=params["keep_drain"],
        since=params["since"],
        check_mode=module.check_mode,
    )
    answer = decide_locked(params["verb"], request, run, params["lock_path"])
    module.exit_json(changed=changed(params["verb"], answer), **answer)


if __name__ == "__main__":
    main()
