"""The reboot gate module run on the controller: slots, deferral, operators' drains, release.

gpucluster.cluster.reboot_gate (ansible/plugins/modules/reboot_gate.py) decides in pure functions fed with
a `run` callable; these tests drive them against a fake controller that answers `scontrol show node -o` and
`squeue` in Slurm 22.05's own line format (captured on the test rack) and applies `scontrol update`, then
run the module through Ansible against stub commands, and render its documentation. The rack test
(tests/rack/test_nvidia_pins.py) runs it against real slurmctld.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.ansible.adhoc import one_line_result, run_module
from tests.conftest import ROOT

GATE = ROOT / "ansible/plugins/modules/reboot_gate.py"
BIN = Path(sys.executable).parent
# One line of `scontrol show node -o` from the test rack (Slurm 22.05.8); {…} are filled per node.
LINE = (
    "NodeName={name} Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.88 "
    "AvailableFeatures=onprem,rack-c,h100 ActiveFeatures=onprem,rack-c,h100 Gres=gpu:h100:8 NodeAddr={name} "
    "NodeHostName={name} Version=22.05.8 OS=Linux 6.18.44-fc-v1252 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=993 "
    "AllocMem=0 FreeMem=19545 Sockets=1 Boards=1 State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=debug  BootTime={boot} SlurmdStartTime={boot} LastBusyTime={boot} "
    "CfgTRES=cpu=2,mem=993M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
    "ExtSensorsWatts=0 ExtSensorsTemp=n/s{reason}"
)
BOOT = "2026-12-04T15:57:17"


def _load() -> ModuleType:
    """Import the module file by path, as Ansible does (the collection is not a package here)."""
    spec = importlib.util.spec_from_file_location("gpucluster_reboot_gate", GATE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


gate = _load()


@dataclass
class Controller:
    """Node states, reasons and jobs, answering the gate's commands and applying its updates."""

    states: dict[str, str]
    reasons: dict[str, str] = field(default_factory=dict)
    jobs: dict[str, list[str]] = field(default_factory=dict)
    boot: dict[str, str] = field(default_factory=dict)
    commands: list[list[str]] = field(default_factory=list)
    job_slips_in: str = ""  # a job that starts on the node right after the drain

    def __call__(self, argv: Sequence[str]) -> str:
        argv = list(argv)
        self.commands.append(argv)
        if argv[:3] == ["scontrol", "show", "node"]:
            return "\n".join(self._line(name) for name in self.states) + "\n"
        if argv[0] == "squeue":
            node = argv[2].split("=", 1)[1]
            return "".join(f"{job}\n" for job in self.jobs.get(node, []))
        if argv[:2] == ["scontrol", "update"]:
            words = dict(word.split("=", 1) for word in argv[2:])
            node = words["nodename"]
            if words["state"] == "DRAIN":
                self.states[node] += "+DRAIN"
                self.reasons[node] = f"{words['reason']} [root@2026-12-04T16:11:02]"
                if self.job_slips_in:
                    self.jobs[node] = [self.job_slips_in]
            elif words["state"] == "RESUME":
                self.states[node] = self.states[node].replace("+DRAIN", "")
                self.reasons.pop(node, None)
            return ""
        if argv[:2] == ["scontrol", "reboot"]:
            return ""
        raise AssertionError(f"unexpected command {argv}")

    def _line(self, name: str) -> str:
        reason = f" Reason={self.reasons[name]}" if name in self.reasons else ""
        return LINE.format(name=name, state=self.states[name], boot=self.boot.get(name, BOOT), reason=reason)


REASON = "gpucluster reboot: NVIDIA driver 570.172.08 -> 570.195.03"


def _claim(controller: Controller, node: str, max_nodes: int = 2, check_mode: bool = False) -> dict[str, Any]:
    request = gate.Request(
        node=node,
        rack_nodes=("n1", "n2", "n3", "n4"),
        max_nodes=max_nodes,
        max_rack_percent=50,
        reason=REASON,
        check_mode=check_mode,
    )
    return _answer(controller, "claim", request)


def _answer(controller: Controller, verb: str, request: Any) -> dict[str, Any]:
    answer: dict[str, Any] = gate.VERBS[verb](request, controller)
    return answer


def test_parse_reads_state_boot_time_and_a_reason_with_spaces_without_who_set_it() -> None:
    controller = Controller({"n1": "IDLE+DRAIN"}, reasons={"n1": "bad DIMM B2 [root@2026-12-04T16:11:02]"})
    (node,) = gate.parse_nodes(controller(["scontrol", "show", "node", "-o"])).values()
    assert (node.name, node.state, node.reason, node.boot_time) == ("n1", "IDLE+DRAIN", "bad DIMM B2", BOOT)
    assert node.kept_drain and not node.out_for_reboot


def test_an_idle_node_takes_a_free_slot_and_is_drained_with_the_reason() -> None:
    controller = Controller({"n1": "IDLE", "n2": "IDLE"})
    answer = _claim(controller, "n1")
    assert answer["action"] == "go" and answer["drained"] is True, answer
    assert controller.states["n1"] == "IDLE+DRAIN"
    assert controller.reasons["n1"].startswith("gpucluster reboot: NVIDIA driver 570.172.08 -> 570.195.03")


def test_a_node_with_jobs_is_deferred_and_left_alone() -> None:
    controller = Controller({"n1": "MIXED"}, jobs={"n1": ["17", "18"]})
    answer = _claim(controller, "n1")
    assert answer == {
        "action": "defer",
        "why": "n1 runs job(s) 17,18; the next run takes it",
        "drained": False,
        "operator_reason": "",
    }
    assert not [c for c in controller.commands if c[:2] == ["scontrol", "update"]]


def test_a_job_that_lands_between_the_look_and_the_drain_undrains_and_defers() -> None:
    controller = Controller({"n1": "IDLE"}, job_slips_in="19")
    answer = _claim(controller, "n1")
    assert answer["action"] == "defer" and "took job(s) 19" in answer["why"], answer
    assert controller.states["n1"] == "IDLE" and "n1" not in controller.reasons


def test_the_rack_bound_makes_the_next_node_wait_and_a_failed_boot_check_holds_its_slot() -> None:
    # 50 % of a 4-node rack: two at once; n1 rebooting, n2 failed its boot check (DOWN, holds its slot).
    controller = Controller(
        {"n1": "IDLE+DRAIN+REBOOT_ISSUED", "n2": "DOWN+DRAIN", "n3": "IDLE", "n4": "IDLE"},
        reasons={
            "n1": "gpucluster reboot: NVIDIA driver [root@x]",
            "n2": "gpucluster boot check: NVML reports 570.172.08, pinned 570.195.03 [root@x]",
        },
    )
    answer = _claim(controller, "n3", max_nodes=8)
    assert answer["action"] == "wait", answer
    assert answer["why"] == "2 of at most 2 nodes of its rack (50 % of 4) are out for a reboot: n1, n2"
    assert "DRAIN" not in controller.states["n3"]


def test_the_cluster_bound_counts_every_rack() -> None:
    controller = Controller(
        {"a1": "IDLE+DRAIN+REBOOT_REQUESTED", "n1": "IDLE"},
        reasons={"a1": "gpucluster reboot: x [root@x]"},
    )
    answer = _claim(controller, "n1", max_nodes=1)
    assert answer["action"] == "wait" and answer["why"].startswith("1 of at most 1 nodes are out"), answer


def test_a_node_holding_its_slot_from_a_failed_run_goes_again_without_a_new_drain() -> None:
    controller = Controller({"n1": "IDLE+DRAIN"}, reasons={"n1": "gpucluster reboot: x [root@x]"})
    answer = _claim(controller, "n1", max_nodes=1)
    assert answer["action"] == "go" and answer["drained"] is False, answer


@pytest.mark.parametrize("reason", ["bad DIMM B2", "gpucluster accept: awaiting acceptance (accept.yml)"])
def test_an_operators_drain_or_one_awaiting_acceptance_is_kept_and_reported(reason: str) -> None:
    controller = Controller({"n1": "IDLE+DRAIN"}, reasons={"n1": f"{reason} [root@x]"})
    answer = _claim(controller, "n1")
    assert (answer["action"], answer["operator_reason"], answer["drained"]) == ("go", reason, False)
    assert controller.reasons["n1"].startswith(reason)


@pytest.mark.parametrize("state", ["IDLE*", "DOWN*", "UNKNOWN", "IDLE+NOT_RESPONDING"])
def test_a_node_slurmd_never_registered_is_rebooted_directly(state: str) -> None:
    assert _claim(Controller({"n1": state}), "n1")["action"] == "direct"


def test_reboot_asks_slurmctld_for_a_reboot_once_idle_resuming_unless_an_operator_drained() -> None:
    controller = Controller({"n1": "IDLE+DRAIN"})
    _answer(controller, "reboot", gate.Request(node="n1", reason="gpucluster reboot: r"))
    _answer(controller, "reboot", gate.Request(node="n1", reason="bad DIMM B2", keep_drain=True))
    assert controller.commands == [
        ["scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=gpucluster reboot: r", "n1"],
        ["scontrol", "reboot", "ASAP", "reason=bad DIMM B2", "n1"],
    ]


def _since(boot: str, seconds: int) -> int:
    return int(time.mktime(time.strptime(boot, "%Y-%m-%dT%H:%M:%S"))) + seconds


def test_back_needs_a_boot_after_the_request_and_no_reboot_flag() -> None:
    after = gate.Request(node="n1", since=_since(BOOT, -60))
    booted_before = gate.Request(node="n1", since=_since(BOOT, 60))
    assert _answer(Controller({"n1": "IDLE"}), "back", booted_before)["state"] == "rebooting"
    assert _answer(Controller({"n1": "IDLE+DRAIN+REBOOT_ISSUED"}), "back", after)["state"] == "rebooting"
    assert _answer(Controller({"n1": "IDLE"}), "back", after)["state"] == "back"
    reason = "gpucluster boot check: NVML reports X, pinned Y"
    failed = Controller({"n1": "DOWN"}, reasons={"n1": f"{reason} [root@x]"})
    assert _answer(failed, "back", after) == {"state": "failed", "why": reason, "slurm_state": "DOWN"}


def test_release_resumes_only_a_slot_of_ours_that_no_reboot_came_of() -> None:
    controller = Controller(
        {"n1": "IDLE", "n2": "IDLE+DRAIN", "n3": "IDLE+DRAIN+REBOOT_REQUESTED"},
        reasons={"n2": "bad DIMM B2", "n3": REASON},
    )
    _claim(controller, "n1")
    assert _answer(controller, "release", gate.Request(node="n1"))["released"] is True
    assert controller.states["n1"] == "IDLE" and "n1" not in controller.reasons
    # An operator's drain, and a node whose reboot slurmctld is carrying out, are left as they are.
    for node in ("n2", "n3"):
        answer = _answer(controller, "release", gate.Request(node=node))
        assert answer["released"] is False, answer
        assert "DRAIN" in controller.states[node]


def test_check_mode_decides_without_draining_rebooting_or_resuming() -> None:
    controller = Controller({"n1": "IDLE", "n2": "IDLE+DRAIN"}, reasons={"n2": REASON})
    answer = _claim(controller, "n1", check_mode=True)
    assert (answer["action"], answer["drained"]) == ("go", True), answer
    _answer(controller, "reboot", gate.Request(node="n1", check_mode=True))
    assert _answer(controller, "release", gate.Request(node="n2", check_mode=True))["released"] is True
    assert [c for c in controller.commands if c[:2] != ["scontrol", "show"] and c[0] != "squeue"] == []


@pytest.mark.parametrize(
    ("verb", "answer", "changed"),
    [
        ("claim", {"drained": True}, True),
        ("claim", {"drained": False}, False),
        ("reboot", {}, True),
        ("back", {"state": "back"}, False),
        ("release", {"released": False}, False),
    ],
)
def test_only_a_drain_a_reboot_request_or_a_resume_reports_a_change(
    verb: str, answer: dict[str, Any], changed: bool
) -> None:
    assert gate.changed(verb, answer) is changed


def test_a_second_decision_waits_for_the_lock_the_first_holds(tmp_path: Path) -> None:
    import fcntl

    lock_path = tmp_path / "lock"
    controller = Controller({"n1": "IDLE"})
    done: list[dict[str, Any]] = []
    with open(lock_path, "w", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker = threading.Thread(
            target=lambda: done.append(
                gate.decide_locked("back", gate.Request(node="n1"), controller, str(lock_path))
            )
        )
        worker.start()
        worker.join(timeout=0.5)
        assert done == [] and controller.commands == []  # it waits for the lock
    worker.join(timeout=10)
    assert done and done[0]["state"] == "back"


SCONTROL = """#!/bin/sh
echo "$@" >> "$GATE_LOG"
case "$1 $2" in
  "show node") cat "$GATE_NODES" ;;
esac
"""


def _module(tmp_path: Path, args: dict[str, Any], *extra: str) -> tuple[dict[str, Any], list[str]]:
    """Run the module through Ansible on this machine, with scontrol and squeue stubs on PATH."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    (stubs / "scontrol").write_text(SCONTROL)
    (stubs / "squeue").write_text("#!/bin/sh\ntrue\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    (tmp_path / "nodes").write_text(Controller({"n1": "IDLE", "n2": "IDLE"})._line("n1") + "\n")
    env = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "GATE_LOG": str(tmp_path / "log"),
        "GATE_NODES": str(tmp_path / "nodes"),
    }
    args = {"lock_path": str(tmp_path / "lock"), **args}
    answer = one_line_result(run_module("gpucluster.cluster.reboot_gate", args, "-o", *extra, env=env))
    log = tmp_path / "log"
    return answer, log.read_text().splitlines() if log.exists() else []


def test_the_module_claims_through_ansible_and_reports_the_drain_as_a_change(tmp_path: Path) -> None:
    args = {"verb": "claim", "node": "n1", "rack_nodes": ["n1", "n2"], "max_nodes": 1, "reason": REASON}
    answer, log = _module(tmp_path, args)
    assert (answer["action"], answer["drained"], answer["changed"]) == ("go", True, True), answer
    assert log == ["show node -o", f"update nodename=n1 state=DRAIN reason={REASON}"]


def test_the_module_in_check_mode_only_reads(tmp_path: Path) -> None:
    answer, log = _module(tmp_path, {"verb": "claim", "node": "n1", "rack_nodes": ["n1"]}, "--check")
    assert (answer["action"], answer["changed"]) == ("go", True), answer
    assert log == ["show node -o"]


def test_the_module_fails_with_the_command_that_failed(tmp_path: Path) -> None:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "scontrol").write_text("#!/bin/sh\necho 'Unable to contact slurm controller' >&2\nexit 1\n")
    (stubs / "scontrol").chmod(0o755)
    env = {"PATH": f"{stubs}:{os.environ['PATH']}"}
    args = {"verb": "back", "node": "n1", "lock_path": str(tmp_path / "lock")}
    result = run_module("gpucluster.cluster.reboot_gate", args, "-o", env=env)
    assert result.returncode != 0
    assert "scontrol show node -o failed (1): Unable to contact slurm controller" in result.stdout


def test_ansible_doc_renders_the_module() -> None:
    result = subprocess.run(
        [str(BIN / "ansible-doc"), "-t", "module", "gpucluster.cluster.reboot_gate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    for word in (
        "verb",
        "rack_nodes",
        "max_rack_percent",
        "keep_drain",
        "EXAMPLES",
        "RETURN VALUES",
        "operator_reason",
    ):
        assert word in result.stdout, word
