"""A synthetic but plausible sacct history of a rack-only month, for `routing replay` and bench/routing.py.

Jobs arrive at random (a fixed seed) from three accounts: `training` (2-4 nodes, 6-48 h), `research`
(1-2 nodes, 30 min-6 h) and `evals` (1 node, 15 min-2 h); a few research jobs are evals tagged with
`--comment=class=eval` or QOS eval. Every job ran on the rack: a first-come-first-served queue over
`rack_nodes` nodes of 8 GPUs, so waits grow when the rack is busy (no backfill: waits are a little longer
than Slurm's). `python -m tools.routing_history` rewrites examples/routing/sacct-month.txt.
"""

from __future__ import annotations

import argparse
import heapq
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from gpucluster.routing.history import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "routing" / "sacct-month.txt"
MONTH_START = datetime(2026, 11, 1)
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Kind:
    """One account's jobs: share of arrivals, nodes and run time ranges."""

    account: str
    share: float
    nodes: tuple[int, int]
    hours: tuple[float, float]


KINDS = (
    Kind("training", 0.02, (2, 4), (6.0, 36.0)),
    Kind("research", 0.53, (1, 2), (0.5, 6.0)),
    Kind("evals", 0.45, (1, 1), (0.25, 2.0)),
)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _tags(rng: random.Random, kind: Kind) -> tuple[str, str]:
    """QOS and comment: a research job is now and then an eval, named by comment tag or QOS."""
    roll = rng.random()
    if kind.account == "research" and roll < 0.05:
        return "normal", "class=eval nightly"
    if kind.account == "research" and roll < 0.08:
        return "eval", ""
    return "normal", ""


def generate(jobs: int, days: float, rack_nodes: int, seed: int = 33) -> str:
    """The `sacct --parsable2` text of `jobs` jobs submitted over `days` days to `rack_nodes` nodes."""
    rng = random.Random(seed)
    free = [0.0] * rack_nodes  # when each node frees up, seconds after MONTH_START (a heap)
    mean_gap_s = days * 86400 / jobs
    submit_s = 0.0
    lines = [COLUMNS.replace(",", "|")]
    for number in range(jobs):
        submit_s += rng.expovariate(1 / mean_gap_s)
        kind = rng.choices(KINDS, weights=[k.share for k in KINDS])[0]
        nodes = rng.randint(*kind.nodes)
        run_s = int(rng.uniform(*kind.hours) * 3600)
        taken = [heapq.heappop(free) for _ in range(nodes)]
        start_s = max(submit_s, taken[-1])
        for _ in taken:
            heapq.heappush(free, start_s + run_s)
        qos, comment = _tags(rng, kind)
        gpus = nodes * GPUS_PER_NODE
        tres = f"billing={gpus * 8},cpu={gpus * 8},gres/gpu={gpus},mem={nodes * 2}T,node={nodes}"
        submit, start = (
            MONTH_START + timedelta(seconds=int(submit_s)),
            MONTH_START + timedelta(seconds=int(start_s)),
        )
        end = start + timedelta(seconds=run_s)
        fields = [str(100000 + number), "rack", kind.account, qos, _stamp(submit), _stamp(start), _stamp(end),
                  _elapsed(run_s), str(nodes), tres, "COMPLETED", comment]  # fmt: skip
        lines.append("|".join(fields))
    return "\n".join(lines) + "\n"


def main() -> None:
    """Rewrite the shipped sample: a month of 900 jobs on the example's 8 rack nodes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=SAMPLE)
    parser.add_argument("--jobs", type=int, default=900)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--rack-nodes", type=int, default=8)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(generate(args.jobs, args.days, args.rack_nodes))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
