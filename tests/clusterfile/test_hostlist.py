"""Slurm hostlists: each grammar feature and each error by example, and compress/expand round trips.

The rack test (tests/rack/test_gpu_stack.py) checks expand() against `scontrol show hostnames`.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucluster.clusterfile.hostlist import MAX_NAMES, MAX_RANGE, compress, expand

# --- expand: the grammar, feature by feature -----------------------------------------------------


def test_a_plain_name_and_an_empty_hostlist() -> None:
    assert expand("head01") == ["head01"]
    assert expand("") == []


def test_a_range_keeps_the_width_of_its_written_lower_bound() -> None:
    assert expand("gpu-a[08-11]") == ["gpu-a08", "gpu-a09", "gpu-a10", "gpu-a11"]
    assert expand("n[9-10]") == ["n9", "n10"]
    assert expand("n[1-010]") == [f"n{i}" for i in range(1, 11)]  # width 1, as Slurm reads it
    assert expand("n[001-3]") == ["n001", "n002", "n003"]


def test_comma_lists_inside_brackets_mix_numbers_and_ranges() -> None:
    assert expand("a[1,3-5]") == ["a1", "a3", "a4", "a5"]
    assert expand("gpu-c[01,03]") == ["gpu-c01", "gpu-c03"]


def test_several_groups_multiply_out_in_slurms_order() -> None:
    assert expand("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]
    # Slurm loops over the groups before the last from right to left: b changes slowest here.
    assert expand("a[1-2]b[1-2]c[1-2]") == [
        "a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2",
    ]  # fmt: skip


def test_text_after_a_bracket_is_a_suffix() -> None:
    assert expand("gpu[1-2]-ib") == ["gpu1-ib", "gpu2-ib"]
    assert expand("r[1-2]n[1,3]-ib") == ["r1n1-ib", "r1n3-ib", "r2n1-ib", "r2n3-ib"]


def test_top_level_commas_and_whitespace_separate_names_but_not_inside_brackets() -> None:
    assert expand("a[1-2],b[3,5]") == ["a1", "a2", "b3", "b5"]
    spot = ["p5-spot-1", "p5-spot-2", "p5-spot-3", "p5-spot-7"]
    assert expand("p5-spot-[1-3,7],p5-od-2") == [*spot, "p5-od-2"]
    assert expand(" a  b,,c\tn[1-2]\n") == ["a", "b", "c", "n1", "n2"]


def test_duplicates_are_kept_as_slurm_keeps_them() -> None:
    assert expand("n1,n[1-2]") == ["n1", "n1", "n2"]


# --- expand: every error says what is wrong and what to write --------------------------------------


@pytest.mark.parametrize(
    ("hostlist", "message"),
    [
        ("n[1-3", r"'\[' at offset 1 is never closed; add '\]'"),
        ("n1]", r"'\]' at offset 2 closes no '\['"),
        ("n[1[2]]", r"'\[' at offset 3 inside brackets; brackets do not nest"),
        ("n[]", r"empty brackets \[\]"),
        ("n[a-c]", r"'a-c' in \[a-c\] is not a number or a range; write digits"),
        ("n[1,,2]", r"'' in \[1,,2\] is not a number"),
        ("n[1-]", r"'1-' in \[1-\] is not a number"),
        ("n[-1]", r"'-1' in \[-1\] is not a number"),
        ("n[1-2-3]", r"'1-2-3' in \[1-2-3\] is not a number"),
        ("n[5-1]", r"range 5-1 runs backwards; write the lower number first"),
        ("n[0-65536]", rf"range 0-65536 names more than {MAX_RANGE} hosts"),
        ("a[0-1023]b[0-1024]", rf"names more than {MAX_NAMES} hosts"),
    ],
)
def test_bad_hostlists_are_refused_with_a_reason(hostlist: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        expand(hostlist)
    assert str(caught.value).startswith(f"hostlist {hostlist!r}: ")


# --- compress ----------------------------------------------------------------------------------------


def test_compress_joins_runs_and_keeps_gaps() -> None:
    assert compress(["gpu-01", "gpu-02", "gpu-03", "gpu-05", "head"]) == "gpu-[01-03,05],head"
    assert compress(["gpu-c01", "gpu-c03"]) == "gpu-c[01,03]"
    assert compress(["p5-od-1"]) == "p5-od-1"
    assert compress([]) == ""


def test_compress_keeps_the_order_of_first_appearance_and_sorts_within_a_bracket() -> None:
    assert compress(["n3", "login", "n1", "a2", "n2", "n1"]) == "n[1-3],login,a2"


def test_compress_puts_unpadded_numbers_with_the_padding_they_fit() -> None:
    assert compress(["n9", "n10"]) == "n[9-10]"
    assert compress(["gpu-08", "gpu-09", "gpu-10", "gpu-11"]) == "gpu-[08-11]"
    # 7 fits no width-2 bracket (it would read 07), and 010 only a width-3 one.
    assert compress(["n08", "n7", "n010", "n100"]) == "n08,n7,n[010,100]"


@pytest.mark.parametrize("name", ["", "a,b", "n[1]", "two words"])
def test_compress_refuses_names_no_hostlist_can_hold(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be a host name in a hostlist"):
        compress(["ok1", name])


# --- properties --------------------------------------------------------------------------------------

_PREFIXES = st.sampled_from(["n", "gpu-c", "r1n", "p5-spot-", "", "a-b-"])
_NUMBERED = st.builds(
    lambda prefix, number, width: f"{prefix}{number:0{width}d}",
    _PREFIXES,
    st.integers(min_value=0, max_value=1200),
    st.integers(min_value=1, max_value=5),
)
_PLAIN = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z-]", fullmatch=True)  # no number at the end
_ANY = st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True)
NAMES = st.lists(st.one_of(_NUMBERED, _PLAIN, _ANY), max_size=60)


@given(NAMES)
def test_expand_gives_every_compressed_name_back_once(names: list[str]) -> None:
    back = expand(compress(names))
    assert sorted(back) == sorted(set(names))


@given(NAMES)
def test_compress_is_stable_and_keeps_the_order_expand_gives(names: list[str]) -> None:
    text = compress(names)
    assert compress(expand(text)) == text
    assert expand(compress(expand(text))) == expand(text)


@given(NAMES)
def test_compress_writes_nothing_after_a_bracket(names: list[str]) -> None:
    # Slurm before 23.11 refuses a suffix after a bracket; compress output must suit every version.
    assert not re.search(r"\][^,]", compress(names))


@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40, unique=True))
def test_cloud_node_numbers_round_trip_in_order(numbers: list[int]) -> None:
    names = [f"p5-spot-{n}" for n in sorted(numbers)]
    assert expand(compress(names)) == names


_SPANS = st.lists(
    st.tuples(st.integers(min_value=0, max_value=150), st.integers(min_value=0, max_value=6)),
    min_size=1,
    max_size=4,
)
_GROUP = st.builds(
    lambda spans, width: ",".join(
        f"{lo:0{width}d}" if size == 0 else f"{lo:0{width}d}-{lo + size}" for lo, size in spans
    ),
    _SPANS,
    st.integers(min_value=1, max_value=3),
)


@given(st.lists(st.tuples(st.sampled_from(["n", "-r", "x1y"]), _GROUP), min_size=1, max_size=3), _PREFIXES)
def test_a_name_with_several_groups_names_the_product_of_their_sizes(
    groups: list[tuple[str, str]], suffix: str
) -> None:
    pattern = "".join(f"{literal}[{group}]" for literal, group in groups) + suffix
    sizes = [sum(1 + size for size in _sizes(group)) for _, group in groups]
    names = expand(pattern)
    assert len(names) == math.prod(sizes)
    assert sorted(expand(compress(names))) == sorted(set(names))


def _sizes(group: str) -> list[int]:
    """How many numbers past the first each item of a bracket group adds."""
    out = []
    for item in group.split(","):
        low, _, high = item.partition("-")
        out.append(int(high) - int(low) if high else 0)
    return out
