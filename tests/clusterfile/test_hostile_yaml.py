"""The loader bounds the work a file can cause; legitimate anchors and merge keys still load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.clusterfile import ClusterFileError, load, load_text
from gpucluster.clusterfile.yaml_limits import MAX_BYTES, MAX_DEPTH, MAX_VALUES
from tests.conftest import ROOT

EXAMPLE = (ROOT / "clusters" / "example.yaml").read_text(encoding="utf-8")
HEAD = "apiVersion: gpucluster/v1\nkind: Cluster\nname: lol\n"


def nested_aliases(size_bytes: int) -> str:
    """About size_bytes of nested aliases: nine levels of ten, then lines of forty `*l9` each."""
    lines = [HEAD + 'l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    while sum(len(line) + 1 for line in lines) < size_bytes:
        lines.append(f"x{len(lines)}: [" + ", ".join(["*l9"] * 40) + "]")
    return "\n".join(lines) + "\n"


def _rejected(text: str) -> str:
    with pytest.raises(ClusterFileError) as caught:
        load_text(text, "hostile.yaml")
    assert len(caught.value.findings) == 1, caught.value.findings
    return str(caught.value.findings[0])


def test_nested_aliases_of_100_kb_exit_2_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(nested_aliases(100_000), encoding="utf-8")
    assert path.stat().st_size >= 100_000
    result = subprocess.run(
        [sys.executable, "-m", "gpucluster", "validate", str(path)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    # The first line that uses *l9 is the one that makes the document too big.
    assert result.stderr.startswith(f"{path}:14: (document): the document expands to more than {MAX_VALUES}")


def test_alias_expansion_is_named_with_the_alias_and_its_line() -> None:
    text = (
        HEAD
        + "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
        )
    )
    message = _rejected(text)
    assert message.startswith("hostile.yaml:10: (document): the document expands to more than")
    assert "`*f` alone stands for" in message and "merge keys" in message


def test_deep_nesting_is_refused_before_python_recursion() -> None:
    assert "values nest more than" in _rejected(HEAD + "slurm: " + "[" * 5000 + "]" * 5000 + "\n")
    block = HEAD + "".join(" " * depth + f"k{depth}:\n" for depth in range(MAX_DEPTH + 5))
    # The document is level 1 and key k<j> (on line 4 + j) level j + 2: k<MAX_DEPTH - 1> is one too deep.
    too_deep_line = 4 + MAX_DEPTH - 1
    assert _rejected(block).startswith(f"hostile.yaml:{too_deep_line}: (document): values nest more than")


def test_aliases_of_aliases_cannot_nest_past_the_bound() -> None:
    chain = HEAD + "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 200))
    assert "levels deep through aliases" in _rejected(chain)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    assert _rejected(HEAD + "slurm: &s\n  partitions: [*s]\n").startswith(
        "hostile.yaml:4: (document): an alias refers to a value that contains it"
    )


def test_many_plain_values_are_refused_without_aliases() -> None:
    assert f"more than {MAX_VALUES} values" in _rejected(HEAD + "x: [" + "1," * (MAX_VALUES + 1) + "]\n")


def test_an_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(ClusterFileError, match=f"over the {MAX_BYTES}-byte limit"):
        load(path)
    assert f"over the {MAX_BYTES}-byte limit" in _rejected("#" * (MAX_BYTES + 1))


def test_an_impossible_date_is_a_located_yaml_error() -> None:
    assert _rejected(HEAD + "slurm: 2025-13-01\n").startswith(
        "hostile.yaml:4: (document): not valid YAML: '2025-13-01' is not a valid date"
    )


def test_anchors_and_merge_keys_still_load() -> None:
    groups = """    - &spot
      name: p5-spot
      instance_type: p5.48xlarge
      fallback_instance_types: [p5e.48xlarge]
      mixed_gpus: true
      market: spot
      min_count: 0
      max_count: 8
    - <<: *spot
      name: p5-spot-b
      max_count: 2
"""
    start, end = EXAMPLE.index("    - name: p5-spot\n"), EXAMPLE.index("  checkpoint:\n")
    aws = load_text(EXAMPLE[:start] + groups + EXAMPLE[end:], "anchors.yaml").cluster.aws
    assert aws is not None
    by_name = {g.name: g for g in aws.capacity}
    assert by_name["p5-spot-b"].market == "spot" and by_name["p5-spot-b"].max_count == 2
    assert by_name["p5-spot-b"].fallback_instance_types == by_name["p5-spot"].fallback_instance_types
    assert by_name["p5-spot"].max_count == 8


def test_an_alias_used_a_thousand_times_is_within_the_bounds() -> None:
    """Far from the bound: the file gets to the model, which rejects only the unknown keys."""
    text = HEAD + "a: &a [1, 2, 3]\nb: [" + ", ".join(["*a"] * 1000) + "]\n"
    with pytest.raises(ClusterFileError) as caught:
        load_text(text, "many.yaml")
    assert {f.message for f in caught.value.findings} >= {"unknown key"}
    assert not any("values" in f.message for f in caught.value.findings), caught.value.findings
