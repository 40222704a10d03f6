"""One run shows every problem a user can fix: cross-field rules still run when the model refuses the file.

The rules run on a stand-in with unknown keys dropped and broken scalar fields back at their defaults
(gpucluster.clusterfile.stand_in); where no safe stand-in exists, only the structural errors are shown.
"""

from __future__ import annotations

import pytest

from gpucluster.clusterfile import ClusterFileError, load_text
from tests.conftest import ROOT

EXAMPLE = (ROOT / "clusters" / "example.yaml").read_text(encoding="utf-8")
UNDECLARED_CONTROLLER = ("controller: head01", "controller: head99")


def _errors(*edits: tuple[str, str]) -> list[str]:
    text = EXAMPLE
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    with pytest.raises(ClusterFileError) as caught:
        load_text(text, "x.yaml")
    return [str(f) for f in caught.value.findings]


def _line(needle: str) -> int:
    return next(i for i, line in enumerate(EXAMPLE.splitlines(), 1) if needle in line)


def test_a_bad_value_and_an_undeclared_controller_are_both_reported() -> None:
    errors = _errors(("market: spot", "market: spto"), UNDECLARED_CONTROLLER)
    assert errors[0].startswith(f"x.yaml:{_line('market: spot')}: aws.capacity[1].market: Input should be")
    assert errors[1:] == [
        f"x.yaml:{_line('controller: head01')}: slurm.controller: 'head99' is not a declared host; "
        "declare it under onprem.service_hosts (or aws.head_node)"
    ]


def test_an_unknown_key_and_an_unknown_node_group_are_both_reported() -> None:
    errors = _errors(
        ("market: spot", "market: spot\n      colour: red"), ("[p5-od, p5-spot]", "[p6-od, p5-spot]")
    )
    paths = [e.split(": ", 2)[1] for e in errors]
    assert paths == ["aws.capacity[1].colour", "slurm.partitions[1].node_groups[0]"]
    assert "unknown node group 'p6-od'" in errors[1]


def test_a_default_standing_in_for_a_bad_value_raises_nothing_about_its_object() -> None:
    """efa back at its default (true) would clash with `placement_group: false`: about the default, not
    about what the user wrote (perhaps efa: false), so it is left out."""
    unclear = "max_count: 4\n      efa: nope\n      placement_group: false"
    errors = _errors(("max_count: 4", unclear), UNDECLARED_CONTROLLER)
    assert [e.split(": ", 2)[1] for e in errors] == ["aws.capacity[0].efa", "slurm.controller"]


def test_without_a_safe_stand_in_only_the_structural_errors_are_shown() -> None:
    """A required value cannot be set aside without inventing one: the cross-field rules do not run."""
    errors = _errors(("max_count: 4", "max_count: four"), UNDECLARED_CONTROLLER)
    assert [e.split(": ", 2)[1] for e in errors] == ["aws.capacity[0].max_count"]
    errors = _errors(("max_count: 4", "max_cont: 4"), UNDECLARED_CONTROLLER)  # a typo leaves it missing
    paths = sorted(e.split(": ", 2)[1] for e in errors)
    assert paths == ["aws.capacity[0].max_cont", "aws.capacity[0].max_count"]
