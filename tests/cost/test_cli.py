"""`gpucluster cost` and `checkpoint-interval`: reports with sources, plot, and exit 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.cli import main
from gpucluster.clusterfile import Cluster
from gpucluster.cost.analysis import build_report
from tests.conftest import ROOT

EXAMPLE = (ROOT / "clusters" / "example.yaml").read_text()
SACCT = ROOT / "tests" / "cost" / "sacct" / "example-day.txt"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _variant(tmp_path: Path, old: str, new: str) -> str:
    assert old in EXAMPLE
    path = tmp_path / "variant.yaml"
    path.write_text(EXAMPLE.replace(old, new))
    return str(path)


def test_cost_table_names_every_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cost", "clusters/example.yaml")
    assert code == 0
    assert "on-prem (owned)" in out and "break-even u" in out
    for market in (
        "on-demand",
        "savings plan / reserved 1y",
        "savings plan / reserved 3y",
        "capacity block",
        "spot",
    ):
        assert market in out
    inputs = out.split("Inputs:")[1].split("Notes:")[0].strip().splitlines()[1:]
    assert len(inputs) >= 10
    for line in inputs:
        assert (
            "clusters/example.yaml" in line
            or "default (gpucluster.cost)" in line
            or "https://" in line
            or ("racks × profile" in line)
        ), line


def test_cost_json_agrees_with_the_formulas(capsys: pytest.CaptureFixture[str], example: Cluster) -> None:
    code, out, _ = _run(capsys, "cost", "--format", "json", "--utilization", "0.6")
    assert code == 0
    data = json.loads(out)
    assert data["onprem_usd_per_gpu_hour"] == pytest.approx(99_674.09 / (64 * 730 * 0.6), abs=1e-4)
    on_demand = next(m for m in data["markets"] if m["market"] == "on-demand")
    assert on_demand["effective_usd_per_gpu_hour"] == pytest.approx(55.04 / 8)
    assert on_demand["break_even_utilization"] == pytest.approx(
        99_674.09 / (64 * 730) / (55.04 / 8), abs=1e-6
    )
    text = data["recommendation"]["text"]
    assert data["recommendation"]["verdict"] == "hybrid" and "60%" in text and "$3.56" in text
    assert data["monthly_total_usd"] == pytest.approx(build_report(example, "x").monthly_total_usd)


def test_cost_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cost", "--format", "markdown", "--utilization", "80%")
    assert code == 0 and out.startswith("### Cost of `example` at 80% utilization")
    assert "| on-demand | p5.48xlarge |" in out and "**Recommendation:**" in out


def test_cost_from_sacct(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cost", "--utilization-from", str(SACCT), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["utilization_source"].startswith("sacct ")
    # 984 GPU-h allocated from the first start to the last end (39 h) on 160 declared GPUs.
    assert data["utilization"] == pytest.approx(984 / (160 * 39))


def test_plot_curves_cross_at_the_break_even(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, example: Cluster
) -> None:
    pytest.importorskip("matplotlib")
    from gpucluster.cost.plot import curve_points

    png = tmp_path / "cost.png"
    code, _, err = _run(capsys, "cost", "--plot", str(png))
    assert code == 0 and str(png) in err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    report = build_report(example, "x")
    assert report.onprem_curve is not None
    xs, onprem = curve_points(report.onprem_curve)
    for market in report.markets:
        if market.break_even_utilization is None:
            continue
        _, cloud = curve_points(market.curve)
        gaps = [a - b for a, b in zip(onprem, cloud, strict=True)]
        crossing = next(x for x, g1, g2 in zip(xs, gaps, gaps[1:], strict=False) if (g1 > 0) != (g2 > 0))
        assert crossing == pytest.approx(market.break_even_utilization * 100, abs=0.5)


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("    pue: 1.4", "    pue: 0.5", "economics.onprem.pue"),
        ("  expected_utilization: 0.6", "  expected_utilization: 1.6", "economics.expected_utilization"),
        ("    capex_usd: 3200000\n", "", "economics.onprem.capex_usd"),
        ("  expected_utilization: 0.6", "  expected_utilization: 0", "economics.expected_utilization"),
        (
            "  expected_utilization: 0.6",
            "  expected_utilization: 0.6\n  capacity_block_usd_per_hour: {p9.huge: 10}",
            "economics.capacity_block_usd_per_hour",
        ),
        ("    lifetime_years: 5", "    lifetime_years: -1", "economics.onprem.lifetime_years"),
    ],
)
def test_bad_economics_exits_two_with_the_field_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: str, new: str, path: str
) -> None:
    code, _, err = _run(capsys, "cost", _variant(tmp_path, old, new))
    assert code == 2
    assert path in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["cost", "--utilization", "1.5"], "--utilization"),
        (["cost", "--utilization", "abc"], "--utilization"),
        (["cost", "--utilization", "0"], "--utilization"),
        (["cost", "--format", "yaml"], "--format"),
        (["checkpoint-interval", "--size-gib", "-3", "--write-gib-s", "1", "--mtbf-h", "2"], "--size-gib"),
        (["utilization", "--sacct", str(SACCT), "--start", "yesterday"], "--start"),
    ],
)
def test_bad_option_exits_two_naming_it(
    capsys: pytest.CaptureFixture[str], args: list[str], option: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    assert option in capsys.readouterr().err


def test_cost_unreadable_sacct_or_plot_path_exits_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "cost", "--utilization-from", str(tmp_path / "none.txt"))
    assert code == 2 and "cannot read" in err
    pytest.importorskip("matplotlib")
    code, _, err = _run(capsys, "cost", "--plot", str(tmp_path / "no" / "dir" / "x.png"))
    assert code == 2 and "--plot" in err


def test_checkpoint_interval_explicit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "checkpoint-interval",
        "--size-gib",
        "100",
        "--write-gib-s",
        "1",
        "--mtbf-h",
        "24",
        "--restart-s",
        "300",
    )
    assert code == 0
    assert "τ = 69.3 min (young)" in out  # √(2 · 100 s · 86,400 s) = 4,156.9 s
    assert "checkpoint overhead C/τ = 2.4%" in out
    code, out, _ = _run(
        capsys, "checkpoint-interval", "--size-gib", "100", "--write-gib-s", "1", "--mtbf-h", "24", "--daly"
    )
    assert code == 0 and "(daly)" in out


def test_checkpoint_interval_from_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "checkpoint-interval", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["method"] == "young" and data["checkpoint_write_s"] == 120
    assert data["interval_s"] == pytest.approx((2 * 120 * data["mtbf_s"]) ** 0.5)


def test_checkpoint_interval_partial_or_unknown_group_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "checkpoint-interval", "--size-gib", "100")
    assert code == 2 and "--write-gib-s" in err and "--mtbf-h" in err
    code, _, err = _run(capsys, "checkpoint-interval", "--group", "nope")
    assert code == 2 and "aws.capacity" in err and "nope" in err


def test_checkpoint_interval_uses_the_files_interruption_rate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    extra = "  expected_utilization: 0.6\n  spot_interruptions_per_day: 2\n  checkpoint_write_s: 60"
    path = _variant(tmp_path, "  expected_utilization: 0.6", extra)
    code, out, _ = _run(capsys, "checkpoint-interval", path)
    assert code == 0 and "τ = 37.9 min" in out  # √(2 · 60 s · 43,200 s) = 2,276.8 s


def test_cost_names_the_interval_the_contract_gives_spot_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cost", "clusters/example.yaml")
    assert code == 0
    tau_hours = float(out.split("Spot checkpointing: τ = ")[1].split(" h")[0])
    told = int(out.split("GPUCLUSTER_CHECKPOINT_INTERVAL_S=")[1].split(" ")[0])
    assert abs(told - tau_hours * 3600) <= 0.005 * 3600  # the printed τ is rounded to 0.01 h
    # The rendered cloud node tells its jobs exactly that number.
    from gpucluster.clusterfile import load
    from gpucluster.render import render

    cluster = load(ROOT / "clusters" / "example.yaml").cluster
    user_data = render(cluster, "aws", group="p5-spot")["cloud-init/user-data"]
    assert f'"GPUCLUSTER_CHECKPOINT_INTERVAL_S": "{told}"' in user_data
