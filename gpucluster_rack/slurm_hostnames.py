"""Hostlists read by gpucluster and by the rack's own Slurm: patterns, and `scontrol show hostnames`."""

from __future__ import annotations

import random
import re
import shlex

from gpucluster.clusterfile.hostlist import compress
from gpucluster_rack.rack import Rack

MARK = "@@hostlist "
# Each grammar feature, the three-group order Slurm alone defines, and what both sides must refuse.
HAND_BUILT = (
    "n1", "n[1,3]", "gpu-c[01,03]", "a[1,3-5]", "n[9-11]", "n[08-11]", "n[1-010]", "n[001-3]",
    "r[1-2]n[01-02]", "a[1-2]b[1-3]c[1-2]", "a[1-2],b[3,5]", "p5-spot-[1-3,7],p5-od-2", "n1,n1,n[1-2]",
    "n[3-1]", "n[a-b]", "n[0-70000]",
)  # fmt: skip
# Read by Slurm 23.11 and later only (22.05 refuses text after a bracket): compress() never writes one.
SUFFIXED = ("gpu[1-2]-ib", "r[1-2]n[1,3]-ib")


def generated(count: int = 60, seed: int = 31) -> list[str]:
    """Random hostlists: name sets (prefixes, zero padding, gaps) as compress() writes them, and patterns.

    The patterns have up to three bracket groups; the same seed gives the same list.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        names = [
            f"{rng.choice(['n', 'gpu-c', 'p5-od-', 'r1n', 'x'])}{rng.randint(0, 130):0{rng.randint(1, 4)}d}"
            for _ in range(rng.randint(1, 12))
        ]
        out.append(compress(names + rng.sample(["login", "ctl", "head"], rng.randint(0, 2))))
    for _ in range(count // 3):
        groups = [_group(rng) for _ in range(rng.randint(1, 3))]
        # No literal starts with '-': scontrol would take the pattern for an option.
        out.append("".join(f"{rng.choice(['n', 'r', 'x-'])}[{g}]" for g in groups))
    return out


def _group(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(1, 3)):
        low, width = rng.randint(0, 20), rng.randint(1, 3)
        items.append(f"{low:0{width}d}" + (f"-{low + rng.randint(1, 4)}" if rng.random() < 0.6 else ""))
    return ",".join(items)


def scontrol_hostnames(
    rack: Rack, patterns: list[str]
) -> tuple[tuple[int, int], dict[str, list[str] | None]]:
    """((major, minor) Slurm version, {pattern: names, None where Slurm refuses it}) in one ssh call."""
    script = ["scontrol --version"] + [
        f"echo {shlex.quote(MARK + p)}; scontrol show hostnames {shlex.quote(p)} 2>&1" for p in patterns
    ]
    output = rack.ssh("ctl", "; ".join(script))
    version, *sections = output.split(MARK)
    found: dict[str, list[str] | None] = {}
    for section in sections:
        pattern, *lines = section.splitlines()
        refused = any("Invalid hostlist" in line or "error:" in line for line in lines)
        found[pattern] = None if refused else lines
    # `slurm 24.05.8` upstream, `slurm-wlm 22.05.8` from Debian.
    release = re.search(r"(\d+)\.(\d+)", version)
    assert release, f"no Slurm version in {version!r}"
    return (int(release[1]), int(release[2])), found
