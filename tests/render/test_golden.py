"""Rendered node files equal the reviewed golden copies; regenerate with `make golden`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.render_golden import GOLDEN, golden_cases, rendered

CASES = golden_cases()


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_golden(case: str) -> None:
    files = rendered(CASES[case])
    golden_dir = GOLDEN / case
    on_disk = {str(p.relative_to(golden_dir)): p.read_text() for p in golden_dir.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(files), "file set changed: run `make golden` and review"
    for path, text in files.items():
        assert text == on_disk[path], f"{case}/{path} differs from golden: run `make golden` and review"


def test_every_cluster_file_has_a_golden_case() -> None:
    assert {p.name for p in GOLDEN.iterdir()} == set(CASES)


def test_golden_dir_is_not_empty() -> None:
    assert sum(1 for p in Path(GOLDEN).rglob("*.conf")) > 10
