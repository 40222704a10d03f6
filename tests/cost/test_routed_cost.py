"""`gpucluster cost --routing-from SACCT`: the cloud rows are what the policy sends, replayed by hand.

On the example (od $55.04 and spot $22.016 per node-hour, 10 min boot, 10 min idle tail, 60 s passes,
experiments capped at 4 cloud nodes) the small history of tests/routing/samples/sacct-small.txt spans
10 hours, so a month is 73 windows:
- experiments: 5001 (2 nodes, 2 h) and 5004 (2 nodes, 1 h) burst; 5003 (3 nodes) meets the cap.
  Billed 2 × 2h20m + 2 × 1h20m = 7.333 node-h → $403.63, $29,465.27 a month.
- evals: 5005 (1 node, 1 h) on spot, billed 1h20m → $29.35, $2,142.89 a month.
- cloud GPU-hours 16 × 2 + 16 × 1 + 8 × 1 = 56 → 4,088 a month.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.cli import main
from tests.conftest import ROOT

HISTORY = ROOT / "tests" / "routing" / "samples" / "sacct-small.txt"


def test_the_policy_replaces_the_max_count_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "clusters/example.yaml", "--routing-from", str(HISTORY), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    monthly = {row["name"]: row for row in data["monthly"]}
    assert set(monthly) == {"on-prem racks", "route rack_then_cloud → od", "route spot → spot"}
    assert monthly["route rack_then_cloud → od"]["usd"] == pytest.approx(55.04 * (22 / 3) * 73)
    assert monthly["route rack_then_cloud → od"]["market"] == "on-demand"
    assert monthly["route spot → spot"]["usd"] == pytest.approx(55.04 * 0.4 * (4 / 3) * 73)
    assert (monthly["route spot → spot"]["market"], monthly["route spot → spot"]["gpus"]) == ("spot", 64)
    figure = next(i for i in data["inputs"] if i["name"] == "cloud GPU-hours per month (routing)")
    assert figure["value"] == "4,088" and "replay of" in figure["source"]


def test_without_the_flag_the_rows_stay_max_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "clusters/example.yaml", "--format", "json"]) == 0
    names = {row["name"] for row in json.loads(capsys.readouterr().out)["monthly"]}
    assert names == {"on-prem racks", "p5-od", "p5-spot"}


def test_routing_from_needs_a_routing_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "clusters/cloud-only.yaml", "--routing-from", str(HISTORY)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clusters/cloud-only.yaml: routing: --routing-from needs a routing section")


def test_an_empty_history_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text(HISTORY.read_text().splitlines()[0] + "\n")
    assert main(["cost", "clusters/example.yaml", "--routing-from", str(empty)]) == 2
    assert "no started jobs to replay" in capsys.readouterr().err
