"""The verdict's bands come from the cluster file (economics.verdict), edges included, errors located."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster.cli import main
from gpucluster.clusterfile import ClusterFileError, load_text
from gpucluster.clusterfile.model.economics import VerdictBands
from gpucluster.cost.recommend import recommend, rule_of_thumb
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())


def _with_bands(**bands: float) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    data.setdefault("economics", {})["verdict"] = bands
    return data


def test_the_default_bands_are_the_guides_and_their_edges_are_hybrid() -> None:
    bands = VerdictBands()
    assert (bands.cloud_below, bands.onprem_above) == (0.5, 0.75)
    cases = {0.4999: "cloud", 0.5: "hybrid", 0.75: "hybrid", 0.7501: "on-prem"}
    assert {u: rule_of_thumb(u, bands) for u in cases} == cases


def test_the_cluster_files_bands_move_the_rule_and_the_recommendation() -> None:
    loaded = load_text(yaml.safe_dump(_with_bands(cloud_below=0.3, onprem_above=0.6)), "x.yaml").cluster
    bands = loaded.economics.verdict
    assert [rule_of_thumb(u, bands) for u in (0.29, 0.3, 0.6, 0.61)] == [
        "cloud",
        "hybrid",
        "hybrid",
        "on-prem",
    ]
    # 0.65 is on-prem by these bands (hybrid by the defaults); on-prem is cheaper, so the rule stands.
    rec = recommend(
        0.65,
        onprem_usd_per_gpu_hour=2.0,
        cloud_market="on-demand",
        cloud_usd_per_gpu_hour=3.0,
        break_even_utilization=0.4,
        bands=bands,
    )
    assert rec.verdict == "on-prem" and "overrule" not in rec.text


@pytest.mark.parametrize(("low", "high"), [(0.75, 0.5), (0.6, 0.6)])
def test_crossed_or_equal_bands_are_a_located_error(low: float, high: float) -> None:
    with pytest.raises(ClusterFileError) as caught:
        load_text(yaml.safe_dump(_with_bands(cloud_below=low, onprem_above=high)), "x.yaml")
    (finding,) = [str(f) for f in caught.value.findings]
    assert "economics.verdict" in finding and "must be below onprem_above" in finding
    assert "lower cloud_below or raise onprem_above" in finding


def test_a_band_outside_0_to_1_exits_2_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_with_bands(cloud_below=50)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "economics.verdict.cloud_below" in err and "Traceback" not in err


def test_cost_uses_the_cluster_files_bands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(_with_bands(cloud_below=0.2, onprem_above=0.3)))
    assert main(["cost", str(path), "--utilization", "0.25", "--format", "json"]) == 0
    # 25% is cloud by the default bands; between these bands it is hybrid, which costs never overrule.
    assert json.loads(capsys.readouterr().out)["recommendation"]["verdict"] == "hybrid"
