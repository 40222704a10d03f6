"""`gpucluster health`: the nodes as slurmctld lists them, their last pass and who drained them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.cli import main
from gpucluster.health.report import NodeHealth, as_text, parse_nodes

# `scontrol show node -o` lines in 22.05's order (Reason before Comment); fields between trimmed.
NODES = (
    "NodeName=n1 Arch=x86_64 CoresPerSocket=2 State=IDLE+DRAIN Partitions=debug"
    " Reason=gpucluster-health: XID_61: Xid 61 on GPU 0000:2a:00 [root@2026-12-07T23:01:02]"
    " Comment=gpucluster-health prolog 2026-12-07T23:01:01Z XID_61 drain\n"
    "NodeName=n2 Arch=x86_64 CoresPerSocket=2 State=MIXED Partitions=debug"
    " Comment=gpucluster-health periodic 2026-12-07T22:58:00Z ok\n"
    "NodeName=n3 Arch=x86_64 CoresPerSocket=2 State=IDLE+DRAIN Partitions=debug"
    " Reason=bad DIMM B2 [root@2026-12-07T22:00:00] Comment=ticket 4411\n"
    "NodeName=n4 Arch=x86_64 CoresPerSocket=2 State=IDLE Partitions=debug\n"
)


def test_each_node_shows_its_last_pass_and_who_drained_it() -> None:
    assert parse_nodes(NODES) == [
        NodeHealth(
            "n1",
            "IDLE+DRAIN",
            "prolog 2026-12-07T23:01:01Z XID_61 drain",
            "health",
            "gpucluster-health: XID_61: Xid 61 on GPU 0000:2a:00",
        ),
        NodeHealth("n2", "MIXED", "periodic 2026-12-07T22:58:00Z ok", "", ""),
        # an operator's own comment is not a pass
        NodeHealth("n3", "IDLE+DRAIN", "", "operator", "bad DIMM B2"),
        NodeHealth("n4", "IDLE", "", "", ""),
    ]
    lines = as_text(parse_nodes(NODES)).splitlines()
    assert lines[0].split() == ["NODE", "STATE", "LAST", "PASS", "DRAINED", "BY", "REASON"]
    assert lines[3].split()[:4] == ["n3", "IDLE+DRAIN", "-", "operator"] and lines[3].endswith("bad DIMM B2")


def test_the_verb_reads_a_saved_listing_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "nodes.txt"
    saved.write_text(NODES)
    assert main(["health", "--from", str(saved), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(n["node"], n["drained_by"]) for n in listed] == [
        ("n1", "health"),
        ("n2", ""),
        ("n3", "operator"),
        ("n4", ""),
    ]


@pytest.mark.parametrize("text", [None, "not scontrol output\n"])
def test_an_unreadable_or_foreign_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None
) -> None:
    saved = tmp_path / "nodes.txt"
    if text is not None:
        saved.write_text(text)
    assert main(["health", "--from", str(saved)]) == 2
    assert str(saved) in capsys.readouterr().err
