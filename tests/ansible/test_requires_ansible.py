"""The collection's `requires_ansible` states exactly the range `make test` runs it on.

The oldest end is the venv's ansible-core (requirements-dev.txt), the newest the controller root's
(requirements-ansible-newest.txt, tests/rack/test_ansible_newest.py): the claim covers their minor
releases and no other, so widening it needs a new end of the matrix first.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.conftest import ROOT

RUNTIME = ROOT / "ansible" / "meta" / "runtime.yml"
OLDEST = ROOT / "requirements-dev.txt"
NEWEST = ROOT / "requirements-ansible-newest.txt"


def _pinned(requirements: Path) -> Version:
    match = re.search(r"^ansible-core==(\S+)$", requirements.read_text(encoding="utf-8"), re.M)
    assert match, f"{requirements.name}: no ansible-core==X.Y.Z line"
    return Version(match.group(1))


def _claim() -> str:
    claim: str = yaml.safe_load(RUNTIME.read_text(encoding="utf-8"))["requires_ansible"]
    return claim


def test_requires_ansible_spans_the_minor_releases_of_both_ends_of_the_matrix() -> None:
    oldest, newest = _pinned(OLDEST), _pinned(NEWEST)
    claim = SpecifierSet(_claim())
    bounds = {spec.operator: Version(spec.version) for spec in claim}
    assert set(bounds) == {">=", "<"} and len(claim) == 2, f"{RUNTIME}: {_claim()!r}: want '>=X.Y.0,<X.Z.0'"
    assert bounds[">="] == Version(f"{oldest.major}.{oldest.minor}.0"), (
        f"{RUNTIME}: lower bound {bounds['>=']}, but the oldest ansible-core tested is {oldest}"
    )
    assert bounds["<"] == Version(f"{newest.major}.{newest.minor + 1}.0"), (
        f"{RUNTIME}: upper bound {bounds['<']}, but the newest ansible-core tested is {newest}"
    )
    assert oldest in claim and newest in claim


def test_this_suite_runs_on_one_end_of_the_matrix() -> None:
    running = Version(version("ansible-core"))
    assert running in {_pinned(OLDEST), _pinned(NEWEST)}, f"ansible-core {running} is neither pin"


def test_the_collection_readme_states_the_range_and_the_versions_tested() -> None:
    readme = (ROOT / "ansible" / "README.md").read_text(encoding="utf-8")
    assert f"`requires_ansible: {_claim()}`" in readme
    assert f"ansible-core {_pinned(OLDEST)}" in readme and f"on {_pinned(NEWEST)} " in readme
