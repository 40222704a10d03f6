"""`make demo`'s rack part: boot a 3-node rack, converge it, admit its nodes by acceptance, run a 2-node job.

The test rack has no GPUs or HCAs, so acceptance would (rightly) fail every hardware check. The demo shows a
node that passes instead: each compute node's probes answer with the recorded outputs of a healthy 8 x H100
SXM node (gpucluster_rack/healthy_probes.py), and the demo prints each node's verdict and every check's
reason. The demo fails (exit 1) if any node is left drained at its end.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from gpucluster_rack import ROOT, healthy_probes
from gpucluster_rack.playbook import converge
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.sh import progress
from gpucluster_rack.slurm_state import report_left_drained

COMPUTE = ("n1", "n2")
# What gpu_nccl's OpenMPI brings on a node with CUDA (the test rack has no CUDA repository): srun --mpi=pmix
# needs the unversioned libpmix.so, and slurmd loads its MPI plugin when it starts.
PMIX = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libpmix-dev >/dev/null"


def print_verdicts(hosts: dict[str, dict[str, Any]], reports: Path) -> None:
    """Each node's verdict, then each check from its node report: what was found, or why it does not apply."""
    for host, summary in sorted(hosts.items()):
        verdict = "ADMITTED" if summary["passed"] else "KEPT DRAINED"
        print(f"{host}: {verdict} ({summary.get('admission', '')})")
        for check in json.loads((reports / f"{host}.json").read_text())["checks"]:
            why = check["found"] if check["status"] == "pass" else check["message"]
            print(f"    {check['status']:<4} {check['name']:<18} {why}")


def accept(rack: Rack) -> bool:
    """Run accept.yml with the healthy recorded probes; print the verdicts; True if every node passed."""
    for node in COMPUTE:
        rack.ssh(node, f"{PMIX} && systemctl restart slurmd")
    progress(
        "acceptance (ansible/playbooks/accept.yml). The rack has no GPUs or HCAs: on n1 and n2, nvidia-smi,"
        " dcgmi, ibstat, lspci, lsmod and all_reduce_perf print what a healthy 8 x H100 SXM node printed"
        " (tests/accept/samples/healthy), so the checks judge real tool output"
    )
    reports = ROOT / "build" / "accept" / yaml.safe_load(rack.cluster_file.read_text())["name"]
    shutil.rmtree(reports, ignore_errors=True)  # the summary covers every report in the directory
    run, hosts = healthy_probes.accept(rack, [1, 2])
    if run.rc != 0:
        print(run.output[-4000:], file=sys.stderr)
        return False
    print_verdicts(hosts, reports)
    return set(hosts) == set(COMPUTE) and all(report["passed"] for report in hosts.values())


def wait_idle(rack: Rack, count: int, timeout_s: float = 60) -> bool:
    """Until `count` nodes are idle (not drained); False on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if rack.ssh("ctl", "sinfo -h -t idle -o %D", check=False).strip() == str(count):
            return True
        time.sleep(1)
    return False


def main() -> int:
    """Converge, admit, run a job; exit 1 on any failure or a node left drained."""
    rack = Rack(name="demo", size=3)
    try:
        rack.up()
        progress("converging the rack with ansible/site.yml (first run installs packages: a few minutes)")
        started = time.monotonic()
        run = converge(rack)
        if run.rc != 0:
            print(run.output[-4000:], file=sys.stderr)
            return 1
        progress(f"converged in {time.monotonic() - started:.0f} s; new nodes wait drained for acceptance")
        print(rack.ssh("ctl", "sinfo -R"))
        if not accept(rack) or not wait_idle(rack, len(COMPUTE)):
            print(rack.ssh("ctl", "sinfo -R", check=False), file=sys.stderr)
            return 1
        print(rack.ssh("ctl", "sinfo"))
        job = "srun -N2 --gres=gpu:1 bash -c 'echo $(hostname): GPU $CUDA_VISIBLE_DEVICES'"
        print(f"$ {job}")
        print(rack.ssh("ctl", f"timeout 120 {job}"))
        return 1 if report_left_drained(rack) else 0
    finally:
        progress("tearing the rack down")
        down(rack.name)


if __name__ == "__main__":
    sys.exit(main())
