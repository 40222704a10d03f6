"""The example cluster as the acceptance tests judge the recorded samples: at the samples' driver."""

from __future__ import annotations

import pytest

from gpucluster.clusterfile import Cluster, load
from tests.accept.example_at_sample_driver import EXAMPLE


@pytest.fixture(scope="session")
def example() -> Cluster:
    return load(EXAMPLE).cluster
