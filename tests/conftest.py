"""Shared fixtures: the repository root and the shipped cluster files."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.clusterfile import Cluster, load

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_FILES = sorted((ROOT / "clusters").glob("*.yaml"))


@pytest.fixture(scope="session")
def example() -> Cluster:
    return load(ROOT / "clusters" / "example.yaml").cluster
