"""Random YAML and random mutations of the example: the loader ends in a model or a ClusterFileError."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucluster.cli import main
from gpucluster.clusterfile import ClusterFileError, load_text
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


PATHS = [p for p in _paths(EXAMPLE) if p]


def _loads_or_rejects(text: str) -> None:
    try:
        load_text(text, "fuzz.yaml")
    except ClusterFileError as exc:
        assert exc.findings and all(str(f).startswith("fuzz.yaml:") for f in exc.findings)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_random_text_never_raises_anything_else(text: str) -> None:
    _loads_or_rejects(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), values, st.sampled_from(["replace", "delete", "add"]))
def test_mutated_example_never_raises_anything_else(path: tuple[Any, ...], value: Any, how: str) -> None:
    data = copy.deepcopy(EXAMPLE)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if how == "replace":
        parent[path[-1]] = value
    elif how == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[f"extra_{value!s:.5}"] = value
    else:
        parent.append(value)
    _loads_or_rejects(yaml.safe_dump(data, allow_unicode=True))


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200))
def test_cli_exit_status_is_zero_or_two(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["validate", str(path)]) in (0, 2)
