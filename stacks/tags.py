"""Tag keys the stacks set and tools read back (CDK-free, so readers need not load CDK)."""

from __future__ import annotations

from typing import Final

CLUSTER_TAG: Final = "gpucluster:cluster"  # on every resource; the budget filters on it
GROUP_TAG: Final = "gpucluster:group"  # capacity group of an Auto Scaling group and its instances
ROLE_TAG: Final = "gpucluster:role"  # what a bucket is for (checkpoints)
