"""Hostlists as slurmctld writes them, expanded as `scontrol show hostnames` does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucluster.clusterfile.hostlist import compress
from gpucluster.power.hostlists import expand


def test_slurm_hostlists_expand() -> None:
    assert expand("p5-spot-[1-3,7],p5-od-2") == [
        "p5-spot-1",
        "p5-spot-2",
        "p5-spot-3",
        "p5-spot-7",
        "p5-od-2",
    ]
    assert expand("gpu-a[08-10]") == ["gpu-a08", "gpu-a09", "gpu-a10"]
    assert expand("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand("") == []


def test_a_backwards_range_is_an_error() -> None:
    with pytest.raises(ValueError):
        expand("n[3-1]")


@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40, unique=True))
def test_expand_inverts_compress(numbers: list[int]) -> None:
    names = [f"p5-spot-{n}" for n in sorted(numbers)]
    assert expand(compress(names)) == names
