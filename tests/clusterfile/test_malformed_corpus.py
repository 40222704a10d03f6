"""Every malformed cluster file is rejected with its dotted path, the exact line and a hint.

Each file's first line says what it must be rejected for: `# expect: PATH (line N)`, where N is the
line a person fixing it must look at (the offending key or list item, or the parent of a missing key).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpucluster.clusterfile import ClusterFileError, load
from gpucluster.clusterfile.findings import dotted

CORPUS = sorted((Path(__file__).parent / "malformed").glob("*.yaml"))
_HEADER = re.compile(r"^# expect: (?P<path>\S+) \(line (?P<line>[0-9]+)\)$")


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def expected(path: Path) -> tuple[str, int]:
    """(dotted path, line) a corpus file must be rejected with, from its `# expect:` header."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = _HEADER.match(first)
    assert match, f"{path.name}: first line must be `# expect: PATH (line N)`, not {first!r}"
    return match["path"], int(match["line"])


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_malformed_file_names_its_path_and_line(path: Path) -> None:
    want_path, want_line = expected(path)
    with pytest.raises(ClusterFileError) as caught:
        load(path)
    findings = caught.value.findings
    matching = [f for f in findings if dotted(f.path) == want_path]
    assert matching, f"expected {want_path}, got {[dotted(f.path) for f in findings]}"
    assert [f.line for f in matching] == [want_line] * len(matching), [str(f) for f in matching]
    assert re.match(rf"^{re.escape(str(path))}:{want_line}: {re.escape(want_path)}: .+; .+", str(matching[0]))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert 1 <= want_line <= max(len(lines), 1)
    if any(not line.startswith("#") and line.strip() for line in lines):  # a file with content
        assert not lines[want_line - 1].lstrip().startswith("#"), "the line must hold YAML, not a comment"


def test_a_wrong_line_fails_the_check(tmp_path: Path) -> None:
    """The line check can fail: a header one line off is not accepted."""
    source = next(p for p in CORPUS if p.stem == "min-above-max")
    _, want_line = expected(source)
    moved = tmp_path / source.name
    text = source.read_text(encoding="utf-8")
    moved.write_text(text.replace(f"(line {want_line})", f"(line {want_line + 1})", 1), encoding="utf-8")
    with pytest.raises(AssertionError):
        test_malformed_file_names_its_path_and_line(moved)
