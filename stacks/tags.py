"""Tag keys the stacks set and tools read back: defined once in gpucluster.names (CDK-free)."""

from __future__ import annotations

from gpucluster.names import CLUSTER_TAG, ROLE_TAG

__all__ = ["CLUSTER_TAG", "ROLE_TAG"]
