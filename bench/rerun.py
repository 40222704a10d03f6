"""Re-run of a converged test rack at 2, 8 and 16 nodes with Ansible's builtin linear strategy.

Prints, per size: the first converge, the re-run (median of three, or of `--runs N`, each one printed and
checked to report changed=0 on every host), the host-tasks a converged compute node and the controller ran
in the re-run (every task result the play printed for the host: ok, skipping, included), then the per-node
cost of a re-run ((re-run at N - re-run at 2) / (N - 2)) and the targets: the 16-node re-run at most 20 s,
a converged compute node's play at most about 20 tasks. The ratios are to the figures bench/rack.py recorded
on this machine for the roles before this change (bench/README.md): 24.2 s at 16 nodes with the builtin
strategy and 41 host-tasks per compute node (a4a7072), 12.6 s with the removed linear_skip strategy and
template caches (c0be4b7). Those ran in earlier processes: the old collection used ansible-core internals
and no longer exists to run beside this one.
Needs root and `make rack-deps`; about 15 minutes. `--sizes 2 16` runs a part.

`--baseline REV` measures an earlier commit on the same racks: after each converge, three re-runs of this
tree and three of REV's collection (a detached worktree, its own ansible.cfg and gpucluster package)
alternate, each checked for changed=0, and the table adds REV's median and the ratio. That ratio, unlike the
recorded figures, is on this machine under this load.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
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


def baseline_env(tree: Path) -> dict[str, str]:
    """What makes ansible-playbook run another checkout's collection: its ansible.cfg and its gpucluster."""
    return {"ANSIBLE_CONFIG": str(tree / "ansible.cfg"), "PYTHONPATH": str(tree)}


def timed(
    rack: Rack, *extra: str, idempotent: bool, tree: Path | None = None
) -> tuple[float, dict[str, int], str]:
    """Seconds of one site.yml run and its tasks per host; raises on a failure or a re-run that changed.

    tree: another checkout whose site.yml and collection run instead of this one's (--baseline).
    """
    env = baseline_env(tree) if tree else None
    playbook = str(tree / "ansible" / "site.yml") if tree else "ansible/site.yml"
    start = time.perf_counter()
    run = converge(rack, *extra, env=env, playbook=playbook)
    seconds = time.perf_counter() - start
    if run.rc != 0:
        raise RuntimeError(run.output[-3000:])
    changed = {host: c["changed"] for host, c in run.recap().items() if c["changed"]}
    if idempotent and changed:
        raise RuntimeError(f"re-run changed {changed}:\n{run.output[-3000:]}")
    return seconds, tasks_per_host(run.output), run.output


@dataclass(frozen=True)
class Row:
    """One rack size: converge, median re-run, a compute node's and the controller's tasks, the baseline's."""

    converge_s: float
    rerun_s: float
    node_tasks: int
    reruns: tuple[float, ...]  # every re-run, in order (rerun_s is their median)
    controller_tasks: int
    baseline_s: float | None = None
    baseline_node_tasks: int | None = None
    baseline_controller_tasks: int | None = None


def measure(size: int, extra: list[str], baseline: Path | None, count: int = 3) -> Row:
    """Converge, then `count` re-runs (alternating with as many of the baseline's, when given)."""
    rack = Rack(name="rerun", size=size)
    try:
        rack.up()
        first, *_ = timed(rack, *extra, idempotent=False)
        runs, before = [], []
        for _ in range(count):
            runs.append(timed(rack, *extra, idempotent=True))
            if baseline:
                before.append(timed(rack, *extra, idempotent=True, tree=baseline))
        if LOG_DIR.is_dir():
            (LOG_DIR / f"rerun-{size}.log").write_text(runs[-1][2])
        seconds = tuple(run[0] for run in runs)
        tasks = runs[-1][1]
        row = Row(first, statistics.median(seconds), tasks.get("n1", 0), seconds, tasks.get("ctl", 0))
        if not before:
            return row
        old_tasks = before[-1][1]
        return replace(
            row,
            baseline_s=statistics.median(seconds for seconds, *_ in before),
            baseline_node_tasks=old_tasks.get("n1", 0),
            baseline_controller_tasks=old_tasks.get("ctl", 0),
        )
    finally:
        down(rack.name)


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """A detached worktree of rev (removed afterwards)."""
    tree = Path(tempfile.mkdtemp(prefix="rerun-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def print_table(rows: dict[int, Row], baseline: str | None) -> None:
    """The table; with a baseline, its median re-run, tasks and the ratio this tree / baseline."""
    header = "nodes  converge_s  rerun_s  compute_node_tasks  controller_tasks"
    print(
        "\n"
        + header
        + (f"  baseline_rerun_s  baseline_tasks  ratio   (baseline {baseline})" if baseline else "")
    )
    for size, row in rows.items():
        line = (
            f"{size:5d}  {row.converge_s:10.1f}  {row.rerun_s:7.1f}  {row.node_tasks:18d}  "
            f"{row.controller_tasks:16d}"
        )
        if row.baseline_s is not None:
            tasks = f"{row.baseline_node_tasks}/{row.baseline_controller_tasks}"
            line += f"  {row.baseline_s:16.1f}  {tasks:>14}  {row.rerun_s / row.baseline_s:5.2f}"
        print(line)


def main() -> None:
    """Boot, converge and re-run each size; print the table, the per-node cost, the targets and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[2, 8, 16])
    parser.add_argument("--ansible-arg", action="append", default=[], help="passed to ansible-playbook")
    parser.add_argument("--baseline", metavar="REV", help="also re-run this commit's collection, alternating")
    parser.add_argument("--runs", type=int, default=3, help="re-runs per size (the median is reported)")
    args = parser.parse_args()
    rows: dict[int, Row] = {}
    with contextlib.ExitStack() as stack:
        baseline = stack.enter_context(checkout(args.baseline)) if args.baseline else None
        for size in args.sizes:
            rows[size] = row = measure(size, args.ansible_arg, baseline, args.runs)
            each = ", ".join(f"{s:.1f}" for s in row.reruns)
            print(
                f"{size} nodes: converge {row.converge_s:.1f} s, re-run {row.rerun_s:.1f} s"
                f" (median of {each}; spread {min(row.reruns):.1f}-{max(row.reruns):.1f} s)",
                flush=True,
            )
    print_table(rows, args.baseline)
    sizes = sorted(rows)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        per_node = (rows[large].rerun_s - rows[small].rerun_s) / (large - small)
        print(f"per-node cost of a re-run ({small} → {large} nodes): {per_node:.2f} s per added node")
    tasks = max(row.node_tasks for row in rows.values())
    verdict = "met" if tasks <= TARGET_TASKS else "MISSED"
    print(
        f"compute node's play: {tasks} tasks (target ≤ ~{TARGET_TASKS}: {verdict}; "
        f"{tasks / OLD_BUILTIN_TASKS:.2f}x the old roles' {OLD_BUILTIN_TASKS})"
    )
    if 16 in rows:
        again = rows[16].rerun_s
        verdict = "met" if again <= TARGET_16_S else "MISSED"
        print(
            f"16-node re-run: {again:.1f} s (target ≤ {TARGET_16_S:.0f} s: {verdict}); "
            f"{again / OLD_BUILTIN_16_S:.2f}x the old roles' builtin-linear {OLD_BUILTIN_16_S} s, "
            f"{again / OLD_LINEAR_SKIP_16_S:.2f}x the removed linear_skip's {OLD_LINEAR_SKIP_16_S} s "
            "(both recorded on this machine on another day)"
        )


if __name__ == "__main__":
    main()
