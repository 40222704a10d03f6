"""The fabric test's runs, judged, and what they say of each node: pass, bad node, bad link or cannot tell.

The playbook records the runs of gpucluster.accept.fabric_plan in one file next to the node reports::

    {"hosts": [HOST, ...], "runs": [{"name": str, "hosts": [HOST, ...], "cmd": str,
                                     "rc": int, "stdout": str, "stderr": str}, ...]}

A run passes when its peak bus bandwidth at ≥ 1 GiB reaches the lowest multi-node threshold of its
nodes (the catalog's per-fabric figure or the profile's override). Across the ring of pairs: a node
whose every pair failed is a bad node; a failing pair of two nodes that pass with their other
neighbour is a bad link (both nodes fail: a job across them would crawl); when every pair fails, or
only the run across all nodes does, no node or link can be named and every node fails, saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpucluster.accept.checks_perf import busbw_check
from gpucluster.accept.errors import AcceptInputError, first_line
from gpucluster.accept.fabric_finding import Finding
from gpucluster.accept.nccl_tests import GIB_BYTES, parse_nccl_tests
from gpucluster.accept.observations import CommandResult
from gpucluster.accept.observed import parse_result

FABRIC_OBSERVATIONS: Final = "_fabric.observations.json"  # "_" cannot start a host name
TOOL: Final = "srun all_reduce_perf"


@dataclass(frozen=True)
class FabricRun:
    """One recorded run: its name, nodes and the controller's command result."""

    name: str
    hosts: tuple[str, ...]
    result: CommandResult


@dataclass(frozen=True)
class RunVerdict:
    """A run judged against its nodes' threshold; `found` as the report says it."""

    name: str
    hosts: tuple[str, ...]
    ok: bool
    found: str
    problem: str
    peak_gbs: float | None


def judge(run: FabricRun, min_gbs: float) -> RunVerdict:
    """Pass or fail one run: no output, data errors, a slow run or a failed launch fail it."""
    parsed = parse_result(run.result, TOOL, parse_nccl_tests, results_on_failure=True)
    check = busbw_check(run.name, "", min_gbs, parsed)
    ok = check.status == "pass" and run.result.rc == 0
    rc, stderr = run.result.rc, run.result.stderr
    problem = parsed.problem or ("" if rc == 0 else f"{TOOL}: {first_line(stderr) or f'exit status {rc}'}")
    peak = parsed.value.peak_busbw_gbs(GIB_BYTES) if parsed.value else None
    return RunVerdict(run.name, run.hosts, ok, check.found, problem, peak)


def _pair_list(pairs: list[RunVerdict]) -> str:
    return ", ".join(v.name for v in pairs)


def _fail_all(hosts: tuple[str, ...], found: str, problem: str = "") -> dict[str, Finding]:
    return {h: Finding("fail", found, problem) for h in hosts}


def _passing(host: str, verdicts: list[RunVerdict], bad_nodes: set[str]) -> Finding:
    own = [v for v in verdicts if host in v.hosts and v.ok and v.peak_gbs is not None]
    low = min(own, key=lambda v: v.peak_gbs or 0.0)
    found = f"lowest peak busbw {low.peak_gbs:g} GB/s ({low.name}) over {len(own)} passing run(s)"
    blamed = sorted(bad_nodes & {h for v in verdicts if host in v.hosts and not v.ok for h in v.hosts})
    return Finding("pass", found + (f"; its pair with {', '.join(blamed)} failed there" if blamed else ""))


def analyse(hosts: tuple[str, ...], verdicts: list[RunVerdict]) -> dict[str, Finding]:
    """Each tested node's finding from every run's verdict."""
    if len(hosts) < 2:
        why = "fewer than two idle nodes passed every other check: no pair to test the fabric with"
        return {h: Finding("skip", why) for h in hosts}
    pairs = [v for v in verdicts if len(v.hosts) == 2]
    failing = [v for v in pairs if not v.ok]
    whole = next((v for v in verdicts if set(v.hosts) == set(hosts) and len(hosts) > 2), None)
    if not pairs:
        return _fail_all(hosts, "no pair run was recorded for these nodes")
    if len(failing) == len(pairs):
        first = failing[0]
        found = f"every pair failed, so no one node or link is to blame ({first.name}: {first.found})"
        return _fail_all(hosts, found, first.problem)
    if not failing and whole is not None and not whole.ok:
        found = f"the run across all {len(hosts)} nodes failed ({whole.found}) while every pair passed"
        return _fail_all(hosts, found + ": not one node or link", whole.problem)
    mine = {h: [v for v in pairs if h in v.hosts] for h in hosts}
    bad_nodes = {h for h in hosts if mine[h] and not any(v.ok for v in mine[h])}
    findings: dict[str, Finding] = {}
    for host in hosts:
        links = [v for v in mine[host] if not v.ok and not set(v.hosts) & bad_nodes]
        if host in bad_nodes:
            first = mine[host][0]
            found = f"bad node: every pair with it failed ({_pair_list(mine[host])}; {first.found})"
            findings[host] = Finding("fail", found, first.problem)
        elif links:
            link = links[0]
            found = f"bad link {link.name}: that pair failed ({link.found}), both nodes pass elsewhere"
            findings[host] = Finding("fail", found, link.problem)
        else:
            findings[host] = _passing(host, verdicts, bad_nodes)
    return findings


def _run(index: int, data: Any) -> FabricRun:
    where = f"runs[{index}]"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise AcceptInputError(f"{where}: expected an object with name, hosts, rc, stdout, stderr")
    hosts = data.get("hosts")
    if not isinstance(hosts, list) or len(hosts) < 2 or not all(isinstance(h, str) for h in hosts):
        raise AcceptInputError(f"{where}.hosts: expected a list of two or more host names")
    rc, stdout, stderr = data.get("rc"), data.get("stdout", ""), data.get("stderr", "")
    if not isinstance(rc, int) or isinstance(rc, bool):
        raise AcceptInputError(f"{where}.rc: expected an integer exit status, found {rc!r}")
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise AcceptInputError(f"{where}: stdout and stderr must be strings")
    return FabricRun(data["name"], tuple(hosts), CommandResult(rc, stdout, stderr))


def fabric_from(data: Any) -> tuple[tuple[str, ...], list[FabricRun]]:
    """Validate a decoded fabric observations file: the tested hosts and their runs."""
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), list):
        raise AcceptInputError('expected a JSON object {"hosts": [...], "runs": [...]}')
    runs = data.get("runs", [])
    if not isinstance(runs, list):
        raise AcceptInputError("runs: expected a list")
    return tuple(str(h) for h in data["hosts"]), [_run(i, r) for i, r in enumerate(runs)]


def load_fabric(path: Path) -> tuple[tuple[str, ...], list[FabricRun]]:
    """Read a fabric observations file; raise AcceptInputError with the path on any problem."""
    try:
        return fabric_from(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise AcceptInputError(f"{path}: cannot read the file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AcceptInputError(f"{path}: not valid JSON ({exc})") from None
    except AcceptInputError as exc:
        raise AcceptInputError(f"{path}: {exc}") from None
