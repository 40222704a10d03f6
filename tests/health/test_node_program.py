"""gpucluster-health on a node: each check against sample tool output, the decision, the program itself.

The checks read tool output through a runner; here it answers from tests/accept/samples (healthy and
unhealthy 8×H100 nodes, see PROVENANCE.md) or hangs. The last tests run the program itself as Slurm
would, with fake tools first on PATH (scontrol records what it was asked to do).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpucluster.health import node_program as program
from gpucluster.health.node_program import Failure, NodeState, Outcome, Probe

SAMPLES = Path(__file__).resolve().parents[1] / "accept" / "samples"
HEALTHY = (SAMPLES / "healthy" / "nvidia-smi-q-x.xml").read_text()
MODEL = "NVIDIA H100 80GB HBM3"
PREFIX = "gpucluster-health: "


def _probe(**answers: Outcome) -> Probe:
    """A probe whose tools answer from `answers` (by tool name); any other tool is not installed."""

    def runner(argv: list[str], limit_s: float) -> Outcome:
        key = "nvlink" if argv[:2] == ["nvidia-smi", "nvlink"] else argv[0]
        return answers.get(key, Outcome(f"{argv[0]}: not found", 127))

    return Probe(runner, {})


def _smi(text: str) -> Outcome:
    return Outcome(text, 0)


def _without_gpu(xml: str, index: int) -> str:
    """The document with its index-th <gpu> element removed (a GPU fallen off the bus)."""
    start = [i for i in range(len(xml)) if xml.startswith("<gpu id=", i)][index]
    return xml[:start] + xml[xml.index("</gpu>", start) + len("</gpu>") :]


GPUS = {"count": 8, "model": MODEL, "driver": "570.172.08"}


def test_a_healthy_node_passes_the_gpu_and_ecc_checks() -> None:
    probe = _probe(**{"nvidia-smi": _smi(HEALTHY)})
    assert program.check_gpus(probe, GPUS) == [] and program.check_ecc(probe, {}) == []


def test_a_lost_gpu_another_model_and_another_driver_are_each_named() -> None:
    lost = program.check_gpus(_probe(**{"nvidia-smi": _smi(_without_gpu(HEALTHY, 3))}), GPUS)
    assert [(f.code, f.detail, f.reboot_helps) for f in lost] == [("GPU_MISSING", "7 of 8 GPUs listed", True)]
    other = program.check_gpus(_probe(**{"nvidia-smi": _smi(HEALTHY)}), {**GPUS, "model": "NVIDIA H200"})
    assert [(f.code, f.reboot_helps) for f in other] == [("GPU_MODEL", False)]
    assert MODEL in other[0].detail
    pinned = program.check_gpus(_probe(**{"nvidia-smi": _smi(HEALTHY)}), {**GPUS, "driver": "580.126.09"})
    assert [f.code for f in pinned] == ["DRIVER_MISMATCH"] and "570.172.08 loaded" in pinned[0].detail


def test_no_driver_and_a_hung_nvidia_smi_are_failures_not_hangs() -> None:
    no_driver = (SAMPLES / "testrack" / "nvidia-smi-q-x.stdout.txt").read_text()
    failed = program.check_gpus(_probe(**{"nvidia-smi": Outcome(no_driver, 9)}), GPUS)
    assert [f.code for f in failed] == ["NVML_ERROR"] and "couldn't communicate" in failed[0].detail
    hung = program.check_gpus(_probe(**{"nvidia-smi": Outcome("", -9, timed_out=True)}), GPUS)
    assert [(f.code, f.reboot_helps) for f in hung] == [("TOOL_HUNG", True)]


def test_uncorrectable_ecc_errors_are_found_on_the_gpu_that_has_them() -> None:
    unhealthy = (SAMPLES / "unhealthy" / "nvidia-smi-q-x.xml").read_text()
    failed = program.check_ecc(_probe(**{"nvidia-smi": _smi(unhealthy)}), {})
    assert [(f.code, f.reboot_helps) for f in failed] == [("ECC_UNCORRECTABLE", True)]
    assert failed[0].detail.startswith("GPU 5D:00.0: 2 uncorrectable"), failed[0].detail
    pending = HEALTHY.replace(
        "<remapped_row_pending>No</remapped_row_pending>",
        "<remapped_row_pending>Yes</remapped_row_pending>",
        1,
    )
    assert [f.code for f in program.check_ecc(_probe(**{"nvidia-smi": _smi(pending)}), {})] == [
        "ROW_REMAP_PENDING"
    ]


def test_xids_of_the_node_fail_and_the_job_s_own_do_not() -> None:
    log = (
        "NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics Exception\n"
        "NVRM: Xid (PCI:0000:2a:00): 79, pid=0, name=, GPU has fallen off the bus.\n"
        "NVRM: Xid (PCI:0000:2a:00): 79, pid=0, name=, GPU has fallen off the bus.\n"
        "NVRM: Xid (PCI:0000:5d:00): 92, pid=0, High single-bit ECC error rate\n"
    )
    failed = program.check_xid(_probe(journalctl=Outcome(log, 0)), {})
    assert [(f.code, f.reboot_helps) for f in failed] == [("XID_79", True), ("XID_92", True)]
    assert program.check_xid(_probe(journalctl=Outcome("-- No entries --\n", 1)), {}) == []


def test_nvlink_fabric_manager_and_dcgm_diag_fail_on_the_unhealthy_samples() -> None:
    healthy_links = (SAMPLES / "healthy" / "nvidia-smi-nvlink-s.txt").read_text()
    down_links = (SAMPLES / "unhealthy" / "nvidia-smi-nvlink-s.txt").read_text()
    assert program.check_nvlink(_probe(nvlink=Outcome(healthy_links, 0)), {}) == []
    assert [f.detail for f in program.check_nvlink(_probe(nvlink=Outcome(down_links, 0)), {})] == [
        "1 NVLink links inactive"
    ]
    assert program.check_fabric_manager(_probe(systemctl=Outcome("active\n", 0)), {}) == []
    stopped = program.check_fabric_manager(_probe(systemctl=Outcome("inactive\n", 3)), {})
    assert [(f.code, f.detail) for f in stopped] == [
        ("FABRIC_MANAGER_DOWN", "nvidia-fabricmanager: inactive")
    ]
    healthy_diag = (SAMPLES / "healthy" / "dcgmi-diag-r2-j.json").read_text()
    failed_diag = (SAMPLES / "unhealthy" / "dcgmi-diag-r2-j.json").read_text()
    assert program.check_dcgm_diag(_probe(dcgmi=Outcome(healthy_diag, 0)), {"level": 1}) == []
    failed = program.check_dcgm_diag(_probe(dcgmi=Outcome(failed_diag, 226)), {"level": 1})
    assert [(f.code, f.detail, f.reboot_helps) for f in failed] == [
        ("DCGM_DIAG_FAIL", "failed: GPU Memory", False)
    ]


def test_memory_mounts_and_clock(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000000 kB\nMemFree:   100000 kB\nMemAvailable:    300000 kB\n")
    low = program.check_memory(_probe(), {"min_available_fraction": 0.5}, str(meminfo))
    assert [(f.code, f.detail) for f in low] == [("MEMORY_LOW", "30% available, 50% needed")]
    assert program.check_memory(_probe(), {"min_available_fraction": 0.25}, str(meminfo)) == []
    missing = program.check_mounts(_probe(), {"paths": ["/", str(tmp_path)]})
    assert [(f.code, f.detail) for f in missing] == [("MOUNT_MISSING", f"not mounted: {tmp_path}")]
    assert program.check_clock(_probe(timedatectl=Outcome("yes\n", 0)), {}) == []
    assert [f.code for f in program.check_clock(_probe(timedatectl=Outcome("no\n", 0)), {})] == [
        "CLOCK_UNSYNCED"
    ]


def test_a_hung_tool_is_killed_with_its_children_at_its_limit() -> None:
    started = time.monotonic()
    outcome = program.run_limited(["sh", "-c", "sleep 60 & echo $! > /dev/null; sleep 60"], 0.5)
    assert outcome.timed_out and time.monotonic() - started < 5
    hung = subprocess.run(["pgrep", "-f", "^sleep 60$"], capture_output=True, text=True, check=False)
    assert hung.stdout == "", f"children of the hung tool still run: {hung.stdout}"
    assert program.run_limited(["/nonexistent/tool"], 1).rc == 127


def test_nvidia_smi_runs_once_for_the_checks_that_read_it() -> None:
    calls: list[list[str]] = []

    def runner(argv: list[str], limit_s: float) -> Outcome:
        calls.append(argv)
        return Outcome(HEALTHY, 0)

    catalogue = {
        "checks": [{"name": "gpus", "when": ["prolog"], **GPUS}, {"name": "ecc", "when": ["prolog"]}]
    }
    assert program.run_checks(catalogue, "prolog", runner) == (["gpus", "ecc"], [])
    assert calls == [["nvidia-smi", "-q", "-x"]]
    assert program.run_checks(catalogue, "periodic", runner) == ([], [])


XID = Failure("xid", "XID_79", "Xid 79 on GPU 0000:2a:00", True)
MODEL_WRONG = Failure("gpus", "GPU_MODEL", "NVIDIA A100 where H100 is declared", False)
IDLE = NodeState(frozenset({"IDLE"}), "")
NOW = 1_800_000_000.0


def _decide(
    failures: list[Failure],
    node: NodeState = IDLE,
    site: str = "rack",
    rebooted: dict[str, float] | None = None,
) -> program.Action:
    return program.decide(failures, node, site=site, prefix=PREFIX, rebooted_for=rebooted or {}, now=NOW)


def test_a_rack_node_is_rebooted_once_when_a_reboot_can_help_and_drained_after() -> None:
    first = _decide([XID])
    assert (first.kind, first.reason) == (
        "reboot",
        f"{PREFIX}XID_79: Xid 79 on GPU 0000:2a:00 (rebooting once)",
    )
    again = _decide([XID], rebooted={"XID_79": NOW - 600})
    assert (again.kind, again.why) == ("drain", "rack node drained: already rebooted for XID_79")
    assert _decide([XID], rebooted={"XID_79": NOW - 2 * 86400}).kind == "reboot"  # a day later: once more
    stays = _decide([XID, MODEL_WRONG])
    assert (stays.kind, stays.reason) == ("drain", f"{PREFIX}XID_79: Xid 79 on GPU 0000:2a:00")


def test_a_cloud_node_is_drained_for_the_reconciler_to_replace() -> None:
    action = _decide([XID], site="cloud")
    assert (action.kind, action.reason) == ("drain", f"{PREFIX}XID_79: Xid 79 on GPU 0000:2a:00")
    assert "replaces" in action.why


@pytest.mark.parametrize(
    ("node", "why"),
    [
        (NodeState(frozenset({"IDLE", "DRAIN"}), "maintenance: swap PSU [ops@2026-12-01]"), "operator"),
        (NodeState(frozenset({"IDLE", "DRAIN"}), ""), "operator"),
        (NodeState(frozenset({"IDLE", "POWERING_UP"}), ""), "powering"),
        (NodeState(frozenset({"DRAIN"}), f"{PREFIX}XID_79: Xid 79 on GPU 0000:2a:00"), "already"),
    ],
)
def test_operator_drains_power_transitions_and_our_own_drain_are_left_alone(
    node: NodeState, why: str
) -> None:
    for site in ("rack", "cloud"):
        action = _decide([XID], node, site=site)
        assert action.kind == "none" and why in action.why, action


def test_our_drain_for_another_reason_is_brought_up_to_date() -> None:
    node = NodeState(frozenset({"DRAIN"}), f"{PREFIX}MEMORY_LOW: 30% available, 50% needed")
    assert _decide([MODEL_WRONG], node).kind == "drain"


def _tools(
    tmp_path: Path, smi: str, smi_rc: int = 0, node_line: str = "NodeName=n1 State=IDLE Reason=(null)"
) -> dict[str, str]:
    """Fake nvidia-smi, journalctl and scontrol first on PATH; scontrol appends its argv to calls.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "smi.xml").write_text(smi)
    scripts = {
        "nvidia-smi": f"cat {tmp_path}/smi.xml; exit {smi_rc}\n",
        "journalctl": "exit 1\n",
        "scontrol": (f'echo "$*" >> {tmp_path}/calls.txt\n[ "$1" = show ] && echo "{node_line}"\nexit 0\n'),
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    catalogue = {
        "site": "rack",
        "reason_prefix": PREFIX,
        "checks": [
            {"name": "gpus", "when": ["prolog", "periodic"], **GPUS},
            {"name": "xid", "when": ["epilog"]},
        ],
        "limits": {"nvidia-smi": 5},
        "state_dir": str(tmp_path / "state"),
        "log": str(tmp_path / "log" / "health.jsonl"),
    }
    (tmp_path / "health.json").write_text(json.dumps(catalogue))
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "41"}


def _program(tmp_path: Path, env: dict[str, str], when: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        program.__file__,
        "--when",
        when,
        "--catalogue",
        str(tmp_path / "health.json"),
        "--node",
        "n1",
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_program_in_a_prolog_reboots_a_node_with_a_lost_gpu_once_and_fails_the_prolog(
    tmp_path: Path,
) -> None:
    env = _tools(tmp_path, _without_gpu(HEALTHY, 0))
    done = _program(tmp_path, env, "prolog")
    assert done.returncode == 1, done.stderr  # Slurm requeues the job that met the bad node
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls[:2] == [
        "show node -o n1",
        f"reboot ASAP nextstate=RESUME reason={PREFIX}GPU_MISSING: 7 of 8 GPUs listed (rebooting once) n1",
    ]
    assert re.fullmatch(
        r"update nodename=n1 comment=gpucluster-health prolog \S+Z GPU_MISSING reboot", calls[2]
    )
    record = json.loads((tmp_path / "log" / "health.jsonl").read_text())
    assert (record["job"], record["checks"], record["action"]["kind"]) == ("41", ["gpus"], "reboot")
    assert json.loads(done.stdout) == record
    # After the reboot the GPU is still lost: the node is drained, not rebooted again.
    (tmp_path / "calls.txt").unlink()
    assert _program(tmp_path, env, "periodic").returncode == 0  # HealthCheckProgram's exit is not Slurm's cue
    assert (tmp_path / "calls.txt").read_text().splitlines()[-2] == (
        f"update nodename=n1 state=DRAIN reason={PREFIX}GPU_MISSING: 7 of 8 GPUs listed"
    )


def test_the_program_on_a_healthy_node_asks_slurmctld_nothing_and_exits_0(tmp_path: Path) -> None:
    env = _tools(tmp_path, HEALTHY)
    done = _program(tmp_path, env, "prolog")
    assert done.returncode == 0 and not (tmp_path / "calls.txt").exists(), done.stderr
    assert json.loads(done.stdout)["action"]["kind"] == "none"


def test_the_program_leaves_an_operator_drain_and_lets_the_job_run_elsewhere(tmp_path: Path) -> None:
    line = "NodeName=n1 State=IDLE+DRAIN Reason=swap PSU [ops@2026-12-01T10:00:00]"
    env = _tools(tmp_path, _without_gpu(HEALTHY, 0), node_line=line)
    done = _program(tmp_path, env, "prolog")
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls[0] == "show node -o n1" and not any("state=" in c or "reboot" in c for c in calls), calls
    assert json.loads(done.stdout)["action"]["why"].startswith("drained by an operator (swap PSU)")


def test_an_operators_own_comment_on_the_node_is_not_replaced(tmp_path: Path) -> None:
    line = "NodeName=n1 State=IDLE Reason=(null) Comment=rack B2, ticket 4411"
    env = _tools(tmp_path, HEALTHY, node_line=line)
    assert _program(tmp_path, env, "periodic").returncode == 0
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["show node -o n1"]


def test_a_healthy_periodic_pass_records_itself_in_the_nodes_comment(tmp_path: Path) -> None:
    line = "NodeName=n1 State=IDLE Reason=(null) Comment=gpucluster-health periodic 2026-12-01T00:00:00Z ok"
    env = _tools(tmp_path, HEALTHY, node_line=line)
    assert _program(tmp_path, env, "periodic").returncode == 0
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls[0] == "show node -o n1"
    assert re.fullmatch(r"update nodename=n1 comment=gpucluster-health periodic \S+Z ok", calls[1]), calls


def test_without_arguments_it_returns_at_once_and_one_detached_periodic_pass_runs(tmp_path: Path) -> None:
    """Slurm's HealthCheckProgram: no arguments, killed after 60 s, so the pass leaves slurmd at once."""
    env = _tools(tmp_path, HEALTHY)
    # nvidia-smi answers only once the test says so: the pass cannot end before its caller returns.
    go = tmp_path / "go"
    smi = f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\ncat {tmp_path}/smi.xml\n"
    (tmp_path / "bin" / "nvidia-smi").write_text(smi)
    # The default catalogue path is the node's; this test names its own through a tiny wrapper.
    wrapper = tmp_path / "hc"
    wrapper.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import sys; sys.argv[1:] = []; "
        f'from gpucluster.health import node_program as p; p.CATALOGUE = "{tmp_path}/health.json"; '
        "sys.exit(p.main())'\n"
    )
    wrapper.chmod(0o755)
    done = subprocess.run([str(wrapper)], env=env, capture_output=True, text=True, timeout=30, check=False)
    log = tmp_path / "log" / "health.jsonl"
    assert done.returncode == 0 and not log.exists(), done.stderr  # returned with the pass still running
    go.touch()
    deadline = time.monotonic() + 20
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert json.loads(log.read_text())["when"] == "periodic"


def test_a_periodic_pass_is_skipped_while_the_previous_one_holds_the_lock(tmp_path: Path) -> None:
    env = _tools(tmp_path, HEALTHY)
    (tmp_path / "state").mkdir()
    with (tmp_path / "state" / "periodic.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = _program(tmp_path, env, "periodic")
    assert done.returncode == 0 and done.stdout == "" and not (tmp_path / "calls.txt").exists()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "NodeName=n1 Arch=x86_64 State=IDLE+DRAIN Partitions=debug"
            " Reason=bad DIMM B2 [root@2026-12-07T10:00:00]"
            " Comment=gpucluster-health periodic 2026-12-07T09:00:00Z ok",
            NodeState(
                frozenset({"IDLE", "DRAIN"}),
                "bad DIMM B2",
                "gpucluster-health periodic 2026-12-07T09:00:00Z ok",
            ),
        ),
        (
            "NodeName=n2 State=MIXED Comment=hello world Extra=x Reason=(null)",
            NodeState(frozenset({"MIXED"}), "", "hello world"),
        ),
        ("NodeName=n3 State=DOWN*+DRAIN", NodeState(frozenset({"DOWN", "DRAIN"}), "", "")),
    ],
)
def test_scontrols_node_line_gives_state_reason_and_comment(line: str, expected: NodeState) -> None:
    assert program.parse_node(line) == expected


def test_a_node_without_its_checks_runs_its_jobs_and_says_why(tmp_path: Path) -> None:
    env = _tools(tmp_path, HEALTHY)
    (tmp_path / "health.json").unlink()
    done = _program(tmp_path, env, "prolog")
    assert done.returncode == 0 and "health.json" in done.stderr and "no checks run" in done.stderr
    assert not (tmp_path / "calls.txt").exists()
