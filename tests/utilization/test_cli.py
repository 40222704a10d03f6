"""`gpucluster utilization --export` and `gpucluster cost --utilization-from-export` on saved exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.cli import main
from gpucluster.utilization.series import ENGINE_ACTIVE, export_document
from tests.utilization.synthetic import HOUR_S, START_S, STEP_S, answer, flat, gpu_labels

END_S = START_S + 24 * HOUR_S


def _export(tmp_path: Path, rack_active: float = 0.9) -> Path:
    """A day of the example's racks and one cloud node, with known GPU-hours.

    rack-a: 4 nodes × 8 GPUs allocated all day at rack_active; rack-b: gpu-b01/02 scraped idle all day,
    gpu-b03/04 down (never scraped); p5-od-1 up 6 h, allocated, at 0.5.
    """
    series = [
        flat(gpu_labels("rack", "rack-a", f"gpu-a0{node}", gpu, job=f"1{node}"), START_S, END_S, rack_active)
        for node in range(1, 5)
        for gpu in range(8)
    ]
    series += [
        flat(gpu_labels("rack", "rack-b", f"gpu-b0{node}", gpu), START_S, END_S, 0.0)
        for node in (1, 2)
        for gpu in range(8)
    ]
    series += [flat(gpu_labels("cloud", "p5-od", "p5-od-1", 0, job="12"), START_S, START_S + 6 * HOUR_S, 0.5)]
    halves = [[s for s in series if s.labels["node_group"] != "p5-od"], [series[-1]]]
    doc = export_document(
        "http://head01:9090", ENGINE_ACTIVE, (START_S, END_S), STEP_S, [answer(h) for h in halves]
    )
    path = tmp_path / "util.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_table_names_groups_sites_and_the_deciding_rack_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["utilization", "--export", str(_export(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "rack-a" in out and "rack-b" in out and "p5-od" in out and "(site)" in out and "(all)" in out
    # The example owns 64 rack GPUs: 64 × 24 = 1536 GPU-hours; active 32 × 24 × 0.9 = 691.2 → 45.0%, cloud.
    # Over the scraped time only (48 GPUs, 1152 GPU-hours) it would read 60% and say hybrid: the two
    # rack-b nodes that were down are owned, idle capacity, and count as such.
    assert "Verdict: cloud — rack GPUs' engine-active / owned GPU-hours = 45.0%" in out
    assert "economics.verdict: cloud below 50%, on-prem above 75%" in out
    assert "Note: only 75% of the declared rack GPU-hours were scraped" in out


def test_json_has_the_figures_and_the_daily_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["utilization", "--export", str(_export(tmp_path)), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    groups = {g["node_group"]: g for g in doc["groups"]}
    assert groups["rack-a"]["idle_allocated_gpu_hours"] == pytest.approx(32 * 24 * 0.1)
    assert groups["rack-b"]["coverage"] == pytest.approx(0.5) and groups["rack-b"]["activity"] == 0
    assert (
        groups["p5-od"]["available_gpu_hours"] == pytest.approx(6.0) and groups["p5-od"]["coverage"] is None
    )
    assert [s["site"] for s in doc["sites"]] == ["rack", "cloud"]
    assert doc["overall"]["active_gpu_hours"] == pytest.approx(691.2 + 3.0)
    assert doc["verdict"]["utilization"] == pytest.approx(0.45) and doc["verdict"]["verdict"] == "cloud"
    assert doc["window"]["hours"] == 24


def test_days_clips_an_export_to_its_last_days(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["utilization", "--export", str(_export(tmp_path)), "--days", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"]["hours"] == 24


def test_cost_takes_the_measured_figure_and_names_its_origin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _export(tmp_path, rack_active=1.0)
    assert main(["cost", "--utilization-from-export", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["utilization"] == pytest.approx(32 * 24 / (64 * 24))
    source = doc["utilization_source"]
    assert source.startswith("DCGM measured, rack GPUs' engine-active / owned GPU-hours, export ")
    assert str(path) in source and "(1.0 d)" in source


def test_a_plot_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "daily.png"
    assert main(["utilization", "--export", str(_export(tmp_path)), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "plot written" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "util.json:1: not JSON"),
        ('{"format": "other"}', "util.json: format: 'other'; expected 'gpucluster-utilization-export/v1'"),
        (
            '{"format": "gpucluster-utilization-export/v1", "start": 0, "end": 60, "step_s": 60,'
            ' "answers": [{"status": "error", "error": "boom"}]}',
            "util.json: answers[0].status: 'error' boom; expected a successful query_range answer",
        ),
        (
            '{"format": "gpucluster-utilization-export/v1", "start": 0, "end": 60, "step_s": 60,'
            ' "answers": [{"status": "success", "data": {"resultType": "vector", "result": []}}]}',
            "answers[0].data.resultType: 'vector'; use /api/v1/query_range",
        ),
        (
            '{"format": "gpucluster-utilization-export/v1", "start": 0, "end": 60, "step_s": 0,'
            ' "answers": []}',
            "util.json: step_s: 0 must be above 0",
        ),
    ],
)
def test_a_bad_export_exits_2_naming_file_field_and_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "util.json"
    path.write_text(text)
    assert main(["utilization", "--export", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert main(["cost", "--utilization-from-export", str(path)]) == 2
    assert expected in capsys.readouterr().err


def test_an_empty_window_and_misplaced_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(export_document("http://x:9090", ENGINE_ACTIVE, (0, 60), 60, [answer([])])))
    assert main(["utilization", "--export", str(empty)]) == 2
    assert "no DCGM_FI_PROF_GR_ENGINE_ACTIVE samples" in capsys.readouterr().err
    assert main(["utilization", "--export", str(empty), "--start", "2026-11-01T00:00:00"]) == 2
    assert "--start/--end: for --sacct only" in capsys.readouterr().err
    assert main(["utilization", "--sacct", "-", "--days", "3"]) == 2
    assert "--days: for DCGM measurements" in capsys.readouterr().err
    assert main(["utilization", "--export", str(empty), "--save", "x.json"]) == 2
    assert "--save: saves what --prometheus fetched" in capsys.readouterr().err
