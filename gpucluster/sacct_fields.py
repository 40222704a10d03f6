"""Slurm accounting fields as text: elapsed times and GPU counts in TRES strings.

Kept apart from gpucluster.cost so the burst controller on the Slurm controller reads sacct without
importing the cost model and the cluster-file model behind it (a pass runs every minute).
"""

from __future__ import annotations

import re

_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?=,|$)")
_TYPED_GPU_TRES = re.compile(r"(?:^|,)gres/gpu:[^=,]+=(\d+)(?=,|$)")


def elapsed_s(text: str) -> float:
    """Slurm's [D-][HH:]MM:SS elapsed time in seconds."""
    match = _ELAPSED.match(text.strip())
    if not match:
        raise ValueError(f"not a Slurm elapsed time: {text!r}")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def gpus_in_tres(tres: str) -> int:
    """GPUs in an AllocTRES string: the gres/gpu=N total, else the sum of typed counts, else 0."""
    match = _GPU_TRES.search(tres)
    if match:
        return int(match.group(1))
    return sum(int(count) for count in _TYPED_GPU_TRES.findall(tres))
