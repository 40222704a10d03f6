#!/usr/bin/python3
"""gpucluster-health: a node's checks between jobs, and what the node does about a failure.

Slurm runs it on the node as root from the Prolog (`--when prolog`), the Epilog (`--when epilog`) and
as HealthCheckProgram (no arguments: a periodic pass, detached, because slurmd kills that program after 60 s
and DCGM's diagnostic alone may take longer); it reads the catalogue gpucluster rendered for the node's group
(/etc/gpucluster/health.json) and runs the checks due at that moment, each under its own time limit, so a
hung tool costs its limit and never hangs slurmd (the tool's whole process group is killed).

Standard library only: it runs with the node's python3 (Debian 12, Ubuntu, Rocky 9), and is unit-tested in
the repository (tests/health/test_node_program.py) against recorded tool output.

What a failure leads to is `decide`: an operator's drain is never touched; a cloud node is drained with the
reason, and the controller's reconciler powers it down and a new instance replaces it at the next demand
(never while it powers up); a rack node is rebooted once through Slurm (`scontrol reboot ASAP
nextstate=RESUME`) when the failed check says a reboot can help and it has not already been rebooted for
that reason, and drained with the reason otherwise. Every result and action is one JSON line in the log.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

CATALOGUE = "/etc/gpucluster/health.json"
STATE_DIR = "/var/lib/gpucluster/health"  # survives reboots: which reasons a reboot was tried for
LOG = "/var/log/gpucluster/health.jsonl"
COMMENT_PREFIX = "gpucluster-health "  # the node's Slurm Comment: its last periodic or failed pass
SCONTROL_LIMIT_S = 20.0  # the catalogue's limits.scontrol overrides it
# slurmd runs HealthCheckProgram with SLURMD_NODENAME and no PATH: Debian's PATH for root then.
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
REBOOT_MEMORY_S = 24 * 3600  # a reboot for the same reason within a day does not help twice
# XIDs after which NVIDIA's guidance is a GPU reset or a node reboot (the rest are mostly the
# application's): https://docs.nvidia.com/deploy/xid-errors/index.html
XID_REBOOT_HELPS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})
XID_IGNORED = frozenset({13, 31, 43, 45})  # application faults and a job's own kill: not the node's
_XID_LINE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+)")


@dataclass(frozen=True)
class Failure:
    """One failed check: its reason code, what was seen, and whether a reboot can clear it."""

    check: str
    code: str
    detail: str
    reboot_helps: bool


@dataclass(frozen=True)
class Outcome:
    """A command's result: stdout, exit status, and whether it ran past its time limit."""

    stdout: str
    rc: int
    timed_out: bool = False


Runner = Callable[[list[str], float], Outcome]


def run_limited(argv: list[str], limit_s: float) -> Outcome:
    """Run argv under a time limit; past it, kill its process group and do not wait on a hung child."""
    try:
        child = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
    except OSError as exc:
        return Outcome(f"{argv[0]}: {exc.strerror}", 127)
    try:
        out, _ = child.communicate(timeout=limit_s)
        return Outcome(out or "", child.returncode)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        # A tool stuck in the kernel (D state) may never die: wait briefly, then leave it.
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.communicate(timeout=2)
        return Outcome("", -9, timed_out=True)


@dataclass
class Probe:
    """The tools a check reads, each run at most once per pass (nvidia-smi serves several checks)."""

    runner: Runner
    limits: dict[str, float]
    seen: dict[str, Outcome] = field(default_factory=dict)

    def tool(self, name: str, argv: list[str]) -> Outcome:
        """The tool's outcome under its limit (the catalogue's `limits`, 10 s by default)."""
        if name not in self.seen:
            self.seen[name] = self.runner(argv, self.limits.get(name, 10.0))
        return self.seen[name]


def _hung(check: str, tool: str, limit: float, reboot: bool = True) -> Failure:
    return Failure(check, "TOOL_HUNG", f"{tool} gave no answer within {limit:g} s", reboot)


def _smi(probe: Probe, check: str) -> tuple[ET.Element | None, Failure | None]:
    """nvidia-smi -q -x as XML, or the failure that stands for it (no driver, NVML error, hung)."""
    outcome = probe.tool("nvidia-smi", ["nvidia-smi", "-q", "-x"])
    if outcome.timed_out:
        return None, _hung(check, "nvidia-smi -q -x", probe.limits.get("nvidia-smi", 10.0))
    if outcome.rc != 0:
        first = (outcome.stdout.strip().splitlines() or [f"exit status {outcome.rc}"])[0]
        return None, Failure(check, "NVML_ERROR", f"nvidia-smi: {first}", True)
    try:
        root = ET.fromstring(outcome.stdout)
    except ET.ParseError as exc:
        return None, Failure(check, "NVML_ERROR", f"nvidia-smi -q -x printed no XML ({exc})", True)
    return root, None


def _text(node: ET.Element, path: str) -> str:
    found = node.find(path)
    return (found.text or "").strip() if found is not None else ""


def check_gpus(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """GPU count and model as declared, the loaded driver at the pin."""
    root, failure = _smi(probe, "gpus")
    if root is None:
        return [failure] if failure else []
    gpus = root.findall("gpu")
    found: list[Failure] = []
    if len(gpus) < spec["count"]:
        found.append(Failure("gpus", "GPU_MISSING", f"{len(gpus)} of {spec['count']} GPUs listed", True))
    models = sorted({_text(g, "product_name") for g in gpus} - {spec["model"]})
    if models:
        found.append(
            Failure("gpus", "GPU_MODEL", f"{', '.join(models)} where {spec['model']} is declared", False)
        )
    driver = _text(root, "driver_version")
    if spec.get("driver") and driver != spec["driver"]:
        # Installed at the pin but another module loaded: a reboot loads the pinned one.
        found.append(
            Failure("gpus", "DRIVER_MISMATCH", f"driver {driver} loaded, {spec['driver']} pinned", True)
        )
    return found


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def check_ecc(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """No uncorrectable volatile ECC errors, no pending or failed row remapping."""
    root, failure = _smi(probe, "ecc")
    if root is None:
        return [failure] if failure else []
    found: list[Failure] = []
    for gpu in root.findall("gpu"):
        where = gpu.get("id", "?").removeprefix("00000000:")
        volatile = gpu.find("ecc_errors/volatile")
        dbe = 0
        if volatile is not None:
            dbe = _count(_text(volatile, "double_bit/total")) + sum(
                _count((c.text or "").strip()) for c in volatile if "uncorrectable" in c.tag
            )
        if dbe:
            found.append(
                Failure("ecc", "ECC_UNCORRECTABLE", f"GPU {where}: {dbe} uncorrectable (volatile)", True)
            )
        if _text(gpu, "remapped_rows/remapped_row_failure") == "Yes":
            found.append(Failure("ecc", "ROW_REMAP_FAILED", f"GPU {where}: row remapping failed", False))
        elif _text(gpu, "remapped_rows/remapped_row_pending") == "Yes":
            found.append(Failure("ecc", "ROW_REMAP_PENDING", f"GPU {where}: row remap pending a reset", True))
    return found


def check_xid(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """No XID since boot that means the node, not the job (the kernel log's NVRM lines)."""
    argv = ["journalctl", "-k", "-b", "-o", "cat", "--no-pager", "-g", "NVRM: Xid"]
    outcome = probe.tool("journalctl", argv)
    if outcome.timed_out:
        return [_hung("xid", "journalctl -k", probe.limits.get("journalctl", 10.0), reboot=False)]
    seen: dict[int, str] = {}
    for bus, number in _XID_LINE.findall(outcome.stdout):
        xid = int(number)
        if xid not in XID_IGNORED and xid not in seen:
            seen[xid] = bus
    return [
        Failure("xid", f"XID_{xid}", f"Xid {xid} on GPU {bus}", xid in XID_REBOOT_HELPS)
        for xid, bus in seen.items()
    ]


def check_nvlink(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """Every NVLink of every GPU up (NVSwitch systems)."""
    outcome = probe.tool("nvlink", ["nvidia-smi", "nvlink", "-s"])
    if outcome.timed_out:
        return [_hung("nvlink", "nvidia-smi nvlink -s", probe.limits.get("nvlink", 10.0))]
    down = [line.strip() for line in outcome.stdout.splitlines() if "inactive" in line.lower()]
    if outcome.rc != 0 or down:
        detail = f"{len(down)} NVLink links inactive" if down else f"nvidia-smi nvlink -s: exit {outcome.rc}"
        return [Failure("nvlink", "NVLINK_DOWN", detail, True)]
    return []


def check_fabric_manager(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """NVIDIA's fabric manager runs (NVSwitch systems: without it CUDA cannot use the GPUs)."""
    outcome = probe.tool("fabric-manager", ["systemctl", "is-active", "nvidia-fabricmanager"])
    if outcome.timed_out or outcome.stdout.strip() != "active":
        state = "no answer" if outcome.timed_out else outcome.stdout.strip() or f"exit {outcome.rc}"
        return [Failure("fabric_manager", "FABRIC_MANAGER_DOWN", f"nvidia-fabricmanager: {state}", True)]
    return []


def _failed_diag_tests(document: Any) -> list[str]:
    """The names of the tests with a failed result in `dcgmi diag -j` JSON (DCGM 3 and 4 layouts)."""
    if not isinstance(document, dict):
        return []
    root: Any = next((document[k] for k in ("DCGM GPU Diagnostic", "DCGM Diagnostic") if k in document), {})
    failed = []
    for category in root.get("test_categories", []) if isinstance(root, dict) else []:
        for test in category.get("tests", []) if isinstance(category, dict) else []:
            results = test.get("results", []) if isinstance(test, dict) else []
            if any(isinstance(r, dict) and str(r.get("status", "")).lower() == "fail" for r in results):
                failed.append(str(test.get("name", "?")))
    return failed


def check_dcgm_diag(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """DCGM's quick diagnostic (`dcgmi diag -r LEVEL -j`) finds no failed test."""
    level = str(spec.get("level", 1))
    outcome = probe.tool("dcgmi", ["dcgmi", "diag", "-r", level, "-j"])
    if outcome.timed_out:
        return [_hung("dcgm_diag", f"dcgmi diag -r {level}", probe.limits.get("dcgmi", 10.0))]
    try:
        failed = _failed_diag_tests(json.loads(outcome.stdout))
    except ValueError:
        failed = []
        if outcome.rc == 0:
            return [Failure("dcgm_diag", "DCGM_DIAG_FAIL", f"dcgmi diag -r {level} printed no JSON", False)]
    if failed or outcome.rc != 0:
        detail = "failed: " + ", ".join(failed) if failed else f"dcgmi diag -r {level}: exit {outcome.rc}"
        return [Failure("dcgm_diag", "DCGM_DIAG_FAIL", detail, False)]
    return []


def check_mounts(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """Every declared mount point is mounted."""
    missing = [path for path in spec["paths"] if not os.path.ismount(path)]
    return [Failure("mounts", "MOUNT_MISSING", f"not mounted: {' '.join(missing)}", True)] if missing else []


def check_memory(probe: Probe, spec: dict[str, Any], meminfo: str = "/proc/meminfo") -> list[Failure]:
    """MemAvailable is at least the declared share of MemTotal (leaked or pinned memory lowers it)."""
    values = {}
    for line in Path(meminfo).read_text().splitlines():
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0]) if rest.split() else 0
    total, available = values.get("MemTotal", 0), values.get("MemAvailable", 0)
    if total and available / total < spec["min_available_fraction"]:
        share = f"{available / total:.0%} available, {spec['min_available_fraction']:.0%} needed"
        return [Failure("memory", "MEMORY_LOW", share, True)]
    return []


def check_clock(probe: Probe, spec: dict[str, Any]) -> list[Failure]:
    """The clock is synchronized (munge credentials and Slurm's timers depend on it)."""
    outcome = probe.tool("timedatectl", ["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
    if outcome.timed_out or outcome.stdout.strip() != "yes":
        return [Failure("clock", "CLOCK_UNSYNCED", "NTPSynchronized is not yes", False)]
    return []


CHECKS: dict[str, Callable[[Probe, dict[str, Any]], list[Failure]]] = {
    "gpus": check_gpus,
    "ecc": check_ecc,
    "xid": check_xid,
    "nvlink": check_nvlink,
    "fabric_manager": check_fabric_manager,
    "dcgm_diag": check_dcgm_diag,
    "mounts": check_mounts,
    "memory": check_memory,
    "clock": check_clock,
}


def run_checks(
    catalogue: dict[str, Any], when: str, runner: Runner = run_limited
) -> tuple[list[str], list[Failure]]:
    """The checks due `when` (prolog, epilog, periodic), in catalogue order: their names and failures."""
    probe = Probe(runner, {k: float(v) for k, v in catalogue.get("limits", {}).items()})
    ran: list[str] = []
    failures: list[Failure] = []
    for check in catalogue["checks"]:
        if when not in check["when"]:
            continue
        ran.append(check["name"])
        failures += CHECKS[check["name"]](probe, check)
    return ran, failures


@dataclass(frozen=True)
class Action:
    """What the node does: none, drain, or reboot (rack); `why` says why, `reason` is Slurm's."""

    kind: str  # "none" | "drain" | "reboot"
    reason: str
    why: str


def _left_alone(failures: list[Failure], node: NodeState, prefix: str) -> str:
    """Why the node must not be touched now ('' where it may be)."""
    drained = bool(node.states & {"DRAIN", "DRAINED", "DRAINING"})
    if drained and not node.reason.startswith(prefix):
        return f"drained by an operator ({node.reason or 'no reason'}): left as it is"
    if node.states & {"POWERING_UP", "POWER_UP", "POWERING_DOWN", "POWER_DOWN", "POWERED_DOWN"}:
        return "powering up or down: the power programs own the node now"
    if drained and node.reason.startswith(f"{prefix}{failures[0].code}:"):
        return "already drained for this reason"
    return ""


def decide(
    failures: list[Failure],
    node: NodeState,
    *,
    site: str,
    prefix: str,
    rebooted_for: dict[str, float],
    now: float,
) -> Action:
    """The action for one pass's failures on a node of `site` (rack or cloud).

    rebooted_for: when the node was last rebooted for each reason code (a reboot helps once a day).
    """
    if not failures:
        return Action("none", "", "every check passed")
    if why_not := _left_alone(failures, node, prefix):
        return Action("none", "", why_not)
    reason = f"{prefix}{failures[0].code}: {failures[0].detail}"[:200]
    if site == "cloud":
        return Action("drain", reason, "cloud node: drained; the reconciler powers it down and replaces it")
    fresh = [f for f in failures if f.reboot_helps and now - rebooted_for.get(f.code, 0.0) > REBOOT_MEMORY_S]
    if len(fresh) == len(failures):
        return Action("reboot", f"{reason} (rebooting once)"[:200], "a reboot can clear every failure: once")
    again = sorted({f.code for f in failures if f.reboot_helps} - {f.code for f in fresh})
    why = f"already rebooted for {', '.join(again)}" if again else "a reboot does not clear this"
    return Action("drain", reason, f"rack node drained: {why}")


def _scontrol(*args: str, limit_s: float = SCONTROL_LIMIT_S) -> Outcome:
    return run_limited(["scontrol", *args], limit_s)


@dataclass(frozen=True)
class NodeState:
    """The node as slurmctld sees it: its state flags, reason and comment."""

    states: frozenset[str]
    reason: str
    comment: str = ""


_NODE_KEYS = r" (?:Reason|Comment|Extra)="


def _field(text: str, key: str) -> str:
    """One of the free-text fields of `scontrol show node -o` (they may hold spaces), '' where unset."""
    found = re.search(rf"\b{key}=(.*?)(?={_NODE_KEYS}|$)", text)
    value = found.group(1).strip() if found else ""
    if key == "Reason":
        value = re.sub(r" \[[^\]]*@[^\]]*\]$", "", value)  # slurmctld appends [user@time]
    return "" if value == "(null)" else value


def parse_node(text: str) -> NodeState:
    """A node's state flags, reason and comment from its `scontrol show node -o` line."""
    state = re.search(r"\bState=(\S+)", text)
    flags = frozenset(re.split(r"[+*~#!%$@^-]", state.group(1))) - {""} if state else frozenset()
    return NodeState(flags, _field(text, "Reason"), _field(text, "Comment"))


def node_state(name: str, limit_s: float = SCONTROL_LIMIT_S) -> NodeState:
    """The node as slurmctld sees it, from `scontrol show node -o`."""
    return parse_node(_scontrol("show", "node", "-o", name, limit_s=limit_s).stdout)


def act(
    name: str,
    action: Action,
    state_dir: Path,
    failures: list[Failure],
    now: float,
    *,
    limit_s: float = SCONTROL_LIMIT_S,
) -> Outcome | None:
    """Carry the action out through slurmctld; remember a reboot's reasons across the reboot."""
    if action.kind == "drain":
        return _scontrol(
            "update", f"nodename={name}", "state=DRAIN", f"reason={action.reason}", limit_s=limit_s
        )
    if action.kind == "reboot":
        state_dir.mkdir(parents=True, exist_ok=True)
        marks = _rebooted_for(state_dir)
        marks.update({f.code: now for f in failures})
        (state_dir / "rebooted.json").write_text(json.dumps(marks))
        return _scontrol(
            "reboot", "ASAP", "nextstate=RESUME", f"reason={action.reason}", name, limit_s=limit_s
        )
    return None


def _rebooted_for(state_dir: Path) -> dict[str, float]:
    try:
        marks = json.loads((state_dir / "rebooted.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in marks.items()} if isinstance(marks, dict) else {}


def pass_comment(when: str, at: float, failures: list[Failure], action: Action) -> str:
    """The node's Slurm Comment after a pass: `gpucluster health` lists it for every node."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    result = ",".join(dict.fromkeys(f.code for f in failures)) or "ok"
    acted = "" if action.kind == "none" else f" {action.kind}"
    return f"{COMMENT_PREFIX}{when} {stamp} {result}{acted}"


def _detach() -> bool:
    """Leave slurmd: the caller's parent returns at once (False); the detached grandchild runs (True)."""
    if os.fork():
        return False
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # slurmd reads the program's output until it closes: hand it nothing to wait on
    return True


def _one_periodic_pass(state_dir: Path) -> IO[str] | None:
    """A lock held while a periodic pass runs (None where another pass holds it)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = (state_dir / "periodic.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


def main(argv: list[str] | None = None) -> int:
    """Run the due checks, act, log one line; exit 1 from the Prolog on failure so Slurm requeues the job.

    Without arguments (Slurm's HealthCheckProgram passes none) it is `--when periodic --detach`.
    """
    argv = sys.argv[1:] if argv is None else argv
    os.environ.setdefault("PATH", ROOT_PATH)
    parser = argparse.ArgumentParser(prog="gpucluster-health", description=__doc__.splitlines()[0])
    parser.add_argument("--when", choices=["prolog", "epilog", "periodic"], required=True)
    parser.add_argument("--catalogue", default=CATALOGUE)
    parser.add_argument(
        "--node", default=os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    )
    parser.add_argument("--dry-run", action="store_true", help="check and print the action; change nothing")
    parser.add_argument("--detach", action="store_true", help="return at once; the pass runs on its own")
    args = parser.parse_args(argv or ["--when", "periodic", "--detach"])
    try:
        catalogue = json.loads(Path(args.catalogue).read_text())
    except (OSError, ValueError) as exc:
        # A node without its group's checks (booted from user data older than them) is not taken out for it.
        print(f"gpucluster-health: {args.catalogue}: {exc}; no checks run", file=sys.stderr)
        return 0
    state_dir = Path(catalogue.get("state_dir", STATE_DIR))
    if args.detach and not _detach():
        return 0
    lock = _one_periodic_pass(state_dir) if args.when == "periodic" else None
    if args.when == "periodic" and lock is None:
        return 0  # the previous periodic pass is still running
    limit_s = float(catalogue.get("limits", {}).get("scontrol", SCONTROL_LIMIT_S))
    started = time.time()
    ran, failures = run_checks(catalogue, args.when)
    # slurmctld is asked only when there is something to say: a failure, or a periodic pass (idle nodes).
    ask = bool(failures) or args.when == "periodic"
    node = node_state(args.node, limit_s) if ask else NodeState(frozenset(), "")
    action = decide(
        failures,
        node,
        site=catalogue["site"],
        prefix=catalogue["reason_prefix"],
        rebooted_for=_rebooted_for(state_dir),
        now=started,
    )
    done = None if args.dry_run else act(args.node, action, state_dir, failures, started, limit_s=limit_s)
    # An operator's own comment on the node is never replaced.
    if ask and not args.dry_run and (not node.comment or node.comment.startswith(COMMENT_PREFIX)):
        comment = pass_comment(args.when, started, failures, action)
        _scontrol("update", f"nodename={args.node}", f"comment={comment}", limit_s=limit_s)
    record = {
        "at": round(started, 3),
        "node": args.node,
        "when": args.when,
        "job": os.environ.get("SLURM_JOB_ID", ""),
        "checks": ran,
        "failures": [asdict(f) for f in failures],
        "action": asdict(action),
        "acted": None if done is None else {"rc": done.rc, "output": done.stdout.strip()[:500]},
        "seconds": round(time.time() - started, 3),
    }
    line = json.dumps(record, sort_keys=True)
    print(line)
    try:
        log = Path(catalogue.get("log", LOG))
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as out:
            out.write(line + "\n")
    except OSError as exc:
        print(f"gpucluster-health: log not written: {exc}", file=sys.stderr)
    return 1 if failures and args.when == "prolog" and action.kind != "none" else 0


if __name__ == "__main__":
    sys.exit(main())
