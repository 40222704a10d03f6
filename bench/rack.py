"""Converge and idempotent re-run of test racks of 2, 4, 8 and 16 nodes, and day two: a rack added.

Prints a table and the re-run ratio 16-node/2-node (target ≤ 2.0), the 8-node re-run with Ansible's
defaults (no pipelining, 5 forks, no fact cache) against the tuned ansible.cfg, then the seconds of the
one `--limit` run that adds a 2-node rack to a running 4-node cluster (a job running on it throughout).
A re-run is the median of three, each checked to report changed=0 on every host (else it is not a
re-run); beside it, the CPU seconds the re-runs spent (mean of the three): Ansible's side
(ansible-playbook, its workers and the ssh clients they wait for) and the whole machine's, which also
holds every test node, so where the machine's CPU seconds over its cores come near the wall time the
run is bound by this machine's cores.
Needs root and `make rack-deps`; takes about half an hour. `--sizes 2 16` or `--day-two-only` run a part.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpucluster import names  # noqa: E402
from gpucluster_rack.playbook import converge  # noqa: E402
from gpucluster_rack.rack import Rack, down  # noqa: E402

UNTUNED = {
    "ANSIBLE_PIPELINING": "False",
    "ANSIBLE_FORKS": "5",
    "ANSIBLE_GATHERING": "implicit",
    "ANSIBLE_CACHE_PLUGIN": "memory",
}


CPU_SPENT: list[tuple[float, float]] = []  # (Ansible's CPU seconds, the machine's) of each timed run


def _machine_cpu_s() -> float:
    """CPU seconds this machine has spent busy since boot (all cores; /proc/stat less idle and iowait)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(rack: Rack, env: dict[str, str] | None = None, *extra: str, idempotent: bool = False) -> float:
    """Seconds of one site.yml run; raises if it failed (or, for a re-run, changed anything)."""
    ansible_cpu, machine_cpu = _children_cpu_s(), _machine_cpu_s()
    start = time.perf_counter()
    run = converge(rack, *extra, env=env or {})
    seconds = time.perf_counter() - start
    CPU_SPENT.append((_children_cpu_s() - ansible_cpu, _machine_cpu_s() - machine_cpu))
    if run.rc != 0:
        raise RuntimeError(run.output[-3000:])
    changed = {host: c["changed"] for host, c in run.recap().items() if c["changed"]}
    if idempotent and changed:
        raise RuntimeError(f"re-run changed {changed}:\n{run.output[-3000:]}")
    return seconds


def rerun(rack: Rack, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Median seconds of three idempotent re-runs, and their mean Ansible and machine CPU seconds."""
    seconds = statistics.median(timed(rack, env, idempotent=True) for _ in range(3))
    ansible_cpu, machine_cpu = (statistics.mean(spent) for spent in zip(*CPU_SPENT[-3:], strict=True))
    return seconds, ansible_cpu, machine_cpu


def day_two() -> float:
    """Seconds of the one `--limit` run that adds a 2-node rack to a running 4-node cluster."""
    rack = Rack(name="bench", size=7, declared=5)  # ctl, n1-n4 in the cluster file; n5, n6 spare
    try:
        rack.up()
        timed(rack)
        rack.ssh("ctl", "scontrol update nodename=n[1-4] state=RESUME")  # admitted (acceptance not timed)
        job = rack.ssh("ctl", "sbatch --parsable -N1 -w n1 --wrap 'sleep 3600'").strip()
        cluster = yaml.safe_load(rack.cluster_file.read_text())
        added = [rack.node(i) for i in (5, 6)]
        cluster["onprem"]["racks"].append(
            {
                "name": "rack-day2",
                "profile": cluster["onprem"]["racks"][0]["profile"],
                "nodes": [{"name": n.name, "address": n.address} for n in added],
            }
        )
        cluster["slurm"]["partitions"][0]["node_groups"].append("rack-day2")
        rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))
        seconds = timed(rack, None, "--limit", f"ctl,{names.rack_group('rack-day2')}")
        state = rack.ssh("ctl", f"squeue -h -j {job} -o %T").strip()
        if state != "RUNNING":
            raise RuntimeError(f"job {job} is {state or 'gone'} after the rack was added")
        return seconds
    finally:
        down(rack.name)


def main() -> None:
    """Boot, converge, re-run for each size; print the table and ratios; then day two."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[2, 4, 8, 16])
    parser.add_argument("--day-two-only", action="store_true")
    args = parser.parse_args()
    sizes = [] if args.day_two_only else args.sizes
    rows: list[tuple[int, float, float, float, float]] = []
    untuned = 0.0
    for size in sizes:
        rack = Rack(name="bench", size=size)
        try:
            rack.up()
            first = timed(rack)
            again, ansible_cpu, machine_cpu = rerun(rack)
            if size == 8:
                untuned = timed(rack, UNTUNED, idempotent=True)
            rows.append((size, first, again, ansible_cpu, machine_cpu))
            print(f"{size} nodes: converge {first:6.1f} s, re-run {again:6.1f} s", flush=True)
        finally:
            down(rack.name)
    if rows:
        cores = os.cpu_count() or 1
        print(f"\nnodes  converge_s  rerun_s  rerun_ansible_cpu_s  rerun_machine_cpu_s  (÷ {cores} cores)")
        for size, first, again, ansible_cpu, machine_cpu in rows:
            print(
                f"{size:5d}  {first:10.1f}  {again:7.1f}  {ansible_cpu:19.1f}  {machine_cpu:19.1f}"
                f"  ({machine_cpu / cores:.1f})"
            )
        (small, _, small_again, *_), (large, _, large_again, *_) = rows[0], rows[-1]
        ratio = large_again / small_again
        verdict = "met" if ratio <= 2.0 else "MISSED"
        print(f"re-run ratio {large}-node/{small}-node: {ratio:.2f} (target ≤ 2.0 at 16/2: {verdict})")
    if untuned:
        tuned = next(again for size, _, again, *_ in rows if size == 8)
        print(
            f"8-node re-run with Ansible defaults: {untuned:.1f} s vs tuned {tuned:.1f} s "
            f"({untuned / tuned:.2f}x)"
        )
    added = day_two()
    print(f"day two: a 2-node rack added to a running 4-node cluster in one --limit run: {added:.1f} s")


if __name__ == "__main__":
    main()
