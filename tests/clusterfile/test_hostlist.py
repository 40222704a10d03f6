from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucluster.clusterfile.hostlist import compress, expand


def test_expand_keeps_zero_padding() -> None:
    assert expand("gpu-a[08-11]") == ["gpu-a08", "gpu-a09", "gpu-a10", "gpu-a11"]


def test_expand_without_padding_and_suffix() -> None:
    assert expand("n[9-10]x") == ["n9x", "n10x"]


def test_expand_plain_name() -> None:
    assert expand("head01") == ["head01"]


def test_expand_rejects_backwards_range() -> None:
    with pytest.raises(ValueError, match="backwards"):
        expand("n[5-1]")


def test_compress_makes_ranges_and_keeps_gaps() -> None:
    assert compress(["gpu-01", "gpu-02", "gpu-03", "gpu-05", "head"]) == "gpu-[01-03,05],head"


def test_compress_single_host() -> None:
    assert compress(["p5-od-1"]) == "p5-od-1"


@given(st.sets(st.integers(min_value=0, max_value=999), min_size=1, max_size=50))
def test_compress_then_expand_roundtrips(numbers: set[int]) -> None:
    names = [f"n{n:03d}" for n in sorted(numbers)]
    text = compress(names)
    expanded = [h for part in _split(text) for h in _expand_multi(part)]
    assert expanded == names


def _split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _expand_multi(part: str) -> list[str]:
    if "[" not in part:
        return [part]
    prefix, spans = part[:-1].split("[")
    out: list[str] = []
    for span in spans.split(","):
        out += expand(f"{prefix}[{span}]") if "-" in span else [prefix + span]
    return out
