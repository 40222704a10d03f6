"""What the fabric test across nodes found for one node: the input of its `nccl_multi_node` check."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.accept.results import CheckStatus


@dataclass(frozen=True)
class Finding:
    """Pass, fail or skip, what the runs showed for this node, and the launch's or tool's own complaint."""

    status: CheckStatus
    found: str
    problem: str = ""
