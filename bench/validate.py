"""Validate+render time of the example vs a generated 1,000-node cluster, in one process.

Prints both figures and the ratio. Target (issue 2): the 1,000-node file renders in < 2 s.
Also times the rejection of a 100 kB file of nested aliases ("billion laughs"). Target: < 1 s.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpucluster.clusterfile import ClusterFileError, load, node_groups  # noqa: E402
from gpucluster.render.output import render_all  # noqa: E402

RUNS = 5


def thousand_node_cluster() -> dict[str, object]:
    """The example with 31 racks of 32 nodes (992) plus AWS groups: 1,004 GPU nodes in all."""
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    racks = []
    for index in range(31):
        name = f"rack-{index:02d}"
        first = f"10.10.{index + 1}.1"
        racks.append(
            {
                "name": name,
                "profile": "dgx-h100",
                "node_range": {"pattern": f"r{index:02d}n[01-32]", "first_address": first},
            }
        )
    data["onprem"]["racks"] = racks
    names = [r["name"] for r in racks]
    data["slurm"]["partitions"] = [
        {"name": "rack", "node_groups": names, "default": True},
        {"name": "cloud", "node_groups": ["p5-od", "p5-spot"]},
        {"name": "all", "node_groups": [*names, "p5-od", "p5-spot"]},
    ]
    return data


def time_validate_and_render(path: Path) -> tuple[float, int]:
    """Median seconds of load+render_all over RUNS runs, and the number of files rendered."""
    times, files = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        cluster = load(path).cluster
        rendered = render_all(cluster, str(path))
        times.append(time.perf_counter() - start)
        files = len(rendered)
    return statistics.median(times), files


def nested_aliases(size_bytes: int) -> str:
    """About size_bytes of YAML: nine levels of ten nested aliases, then lines of forty `*l9`."""
    lines = ["apiVersion: gpucluster/v1", "kind: Cluster", "name: lol", 'l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    while sum(len(line) + 1 for line in lines) < size_bytes:
        lines.append(f"x{len(lines)}: [" + ", ".join(["*l9"] * 40) + "]")
    return "\n".join(lines) + "\n"


def time_rejection(path: Path) -> float:
    """Median seconds until load() refuses path (it must refuse it)."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        try:
            load(path)
        except ClusterFileError:
            times.append(time.perf_counter() - start)
        else:
            raise SystemExit(f"{path}: loaded, but it should have been refused")
    return statistics.median(times)


def main() -> None:
    """Run both cases and print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "thousand.yaml"
        big.write_text(yaml.safe_dump(thousand_node_cluster()))
        count = sum(len(g.hosts) for g in node_groups(load(big).cluster))
        base, base_files = time_validate_and_render(ROOT / "clusters" / "example.yaml")
        large, large_files = time_validate_and_render(big)
        hostile = Path(tmp) / "lol.yaml"
        hostile.write_text(nested_aliases(100_000))
        refused, hostile_kb = time_rejection(hostile), hostile.stat().st_size // 1000
    print(f"example.yaml        validate+render: {base * 1000:8.1f} ms  ({base_files} files)")
    print(f"{count}-node cluster   validate+render: {large * 1000:8.1f} ms  ({large_files} files)")
    print(
        f"ratio large/example: {large / base:.1f}x   target: {count}-node render < 2000 ms -> "
        f"{'met' if large < 2.0 else 'MISSED'}"
    )
    print(
        f"{hostile_kb} kB nested aliases  refused in: {refused * 1000:8.1f} ms   "
        f"target: < 1000 ms -> {'met' if refused < 1.0 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
