"""Every malformed cluster file is rejected with its dotted path, a line number and a hint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpucluster.clusterfile import ClusterFileError, load
from gpucluster.clusterfile.findings import dotted

CORPUS = sorted((Path(__file__).parent / "malformed").glob("*.yaml"))


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def _expected_path(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} lacks its '# expect:' header"
    return first.removeprefix("# expect: ").strip()


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_malformed_file_names_its_path(path: Path) -> None:
    expected = _expected_path(path)
    with pytest.raises(ClusterFileError) as caught:
        load(path)
    findings = caught.value.findings
    matching = [f for f in findings if dotted(f.path) == expected]
    assert matching, f"expected {expected}, got {[dotted(f.path) for f in findings]}"
    finding = matching[0]
    message = str(finding)
    assert re.match(rf"^{re.escape(str(path))}:[0-9]+: {re.escape(expected)}: .+; .+", message)
    lines = path.read_text().splitlines()
    assert 1 <= finding.line <= max(len(lines), 1)
    last_key = next((p for p in reversed(finding.path) if isinstance(p, str)), None)
    if last_key and f"{last_key}:" in path.read_text() and finding.message != "Field required":
        # The reported line is where the offending key (or its parent) is written.
        assert any(k in lines[finding.line - 1] for k in (f"{last_key}:", "- ")), lines[finding.line - 1]
