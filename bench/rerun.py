"""Re-run of a converged test rack at 2, 8 and 16 nodes with Ansible's builtin linear strategy.

Prints, per size: the first converge, the re-run (median of three, each checked to report changed=0 on
every host), the host-tasks a converged compute node and the controller ran in the re-run (every task
result the play printed for the host: ok, skipping, included), then the per-node cost of a re-run
((re-run at N - re-run at 2) / (N - 2)) and the targets: the 16-node re-run at most 20 s, a converged
compute node's play at most about 20 tasks. The ratios are to the figures bench/rack.py recorded on this
machine for the roles before this change (bench/README.md): 24.2 s at 16 nodes with the builtin strategy
and 41 host-tasks per compute node (a4a7072), 12.6 s with the removed linear_skip strategy and template
caches (c0be4b7). Those ran in earlier processes: the old collection used ansible-core internals and no
longer exists to run beside this one.
Needs root and `make rack-deps`; about 15 minutes. `--sizes 2 16` runs a part.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpucluster_rack.playbook import converge  # noqa: E402
from gpucluster_rack.rack import Rack, down  # noqa: E402

LOG_DIR = ROOT / "build"  # the last re-run's output per size, where build/ exists
TARGET_16_S = 20.0
TARGET_TASKS = 20
# Recorded by bench/rack.py on this machine (bench/README.md, "Rack converge and re-run").
OLD_BUILTIN_16_S = 24.2  # a4a7072: builtin linear, before the shared node read
OLD_BUILTIN_TASKS = 41  # a4a7072..c0be4b7: host-tasks of a converged compute node
OLD_LINEAR_SKIP_16_S = 12.6  # c0be4b7: the removed linear_skip strategy and template caches

_TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(?P<name>.*)\]")
_RESULT = re.compile(r"^(?P<status>ok|changed|skipping|failed|fatal): \[(?P<host>[^\]]+)\]")
_INCLUDED = re.compile(r"^included: .* for (?P<hosts>.+)$")


def tasks_per_host(output: str) -> dict[str, int]:
    """How many tasks of the play printed a result for each host (a looped task counts once)."""
    seen: dict[str, set[int]] = defaultdict(set)
    task = -1
    for line in output.splitlines():
        if _TASK.match(line):
            task += 1
        elif match := _RESULT.match(line):
            seen[match["host"]].add(task)
        elif match := _INCLUDED.match(line):
            for host in match["hosts"].split(","):
                seen[host.strip()].add(task)
    return {host: len(tasks) for host, tasks in seen.items()}


def timed(rack: Rack, *extra: str, idempotent: bool) -> tuple[float, dict[str, int], str]:
    """Seconds of one site.yml run and its tasks per host; raises on a failure or a re-run that changed."""
    start = time.perf_counter()
    run = converge(rack, *extra)
    seconds = time.perf_counter() - start
    if run.rc != 0:
        raise RuntimeError(run.output[-3000:])
    changed = {host: c["changed"] for host, c in run.recap().items() if c["changed"]}
    if idempotent and changed:
        raise RuntimeError(f"re-run changed {changed}:\n{run.output[-3000:]}")
    return seconds, tasks_per_host(run.output), run.output


def measure(size: int, extra: list[str]) -> tuple[float, float, int, int]:
    """Converge seconds, median re-run seconds, compute node n1's and the controller's re-run tasks."""
    rack = Rack(name="rerun", size=size)
    try:
        rack.up()
        first, *_ = timed(rack, *extra, idempotent=False)
        runs = [timed(rack, *extra, idempotent=True) for _ in range(3)]
        if LOG_DIR.is_dir():
            (LOG_DIR / f"rerun-{size}.log").write_text(runs[-1][2])
        again = statistics.median(seconds for seconds, *_ in runs)
        tasks = runs[-1][1]
        return first, again, tasks.get("n1", 0), tasks.get("ctl", 0)
    finally:
        down(rack.name)


def main() -> None:
    """Boot, converge and re-run each size; print the table, the per-node cost, the targets and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[2, 8, 16])
    parser.add_argument("--ansible-arg", action="append", default=[], help="passed to ansible-playbook")
    args = parser.parse_args()
    rows: dict[int, tuple[float, float, int, int]] = {}
    for size in args.sizes:
        rows[size] = measure(size, args.ansible_arg)
        first, again, node_tasks, ctl_tasks = rows[size]
        print(f"{size} nodes: converge {first:.1f} s, re-run {again:.1f} s", flush=True)
    print("\nnodes  converge_s  rerun_s  compute_node_tasks  controller_tasks")
    for size, (first, again, node_tasks, ctl_tasks) in rows.items():
        print(f"{size:5d}  {first:10.1f}  {again:7.1f}  {node_tasks:18d}  {ctl_tasks:16d}")
    sizes = sorted(rows)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        per_node = (rows[large][1] - rows[small][1]) / (large - small)
        print(f"per-node cost of a re-run ({small} → {large} nodes): {per_node:.2f} s per added node")
    tasks = max(node_tasks for _, _, node_tasks, _ in rows.values())
    verdict = "met" if tasks <= TARGET_TASKS else "MISSED"
    print(
        f"compute node's play: {tasks} tasks (target ≤ ~{TARGET_TASKS}: {verdict}; "
        f"{tasks / OLD_BUILTIN_TASKS:.2f}x the old roles' {OLD_BUILTIN_TASKS})"
    )
    if 16 in rows:
        again = rows[16][1]
        verdict = "met" if again <= TARGET_16_S else "MISSED"
        print(
            f"16-node re-run: {again:.1f} s (target ≤ {TARGET_16_S:.0f} s: {verdict}); "
            f"{again / OLD_BUILTIN_16_S:.2f}x the old roles' builtin-linear {OLD_BUILTIN_16_S} s, "
            f"{again / OLD_LINEAR_SKIP_16_S:.2f}x the removed linear_skip's {OLD_LINEAR_SKIP_16_S} s"
        )


if __name__ == "__main__":
    main()
