"""`gpucluster routing replay` and `routing explain` on the example: output, and exit 2 on bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpucluster.cli import main
from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.explain import explain
from gpucluster.routing.squeue import parse_text
from tests.conftest import ROOT
from tests.routing.conftest import at

SAMPLES = Path(__file__).parent / "samples"
SHIPPED = ROOT / "examples" / "routing" / "sacct-month.txt"


def _queue() -> str:
    return (SAMPLES / "squeue-pending.txt").read_text() + (SAMPLES / "squeue-running.txt").read_text()


def test_explain_a_job_that_bursts(config: RoutingConfig) -> None:
    lines = explain(config, "4101", parse_text(_queue()), {}, at("10:00"))
    assert lines == [
        "job 4101: account research, QOS normal, comment -",
        "class exp: account research",
        "route rack_then_cloud: job_submit.lua sends it to rack; the controller widens it to rack,od once its"
        " expected wait passes 1h30m",
        "pending 2h00m in rack (Resources); expected rack start 2026-11-02T11:00:00",
        "this pass: job 4101 class exp expected wait 3h00m: widen: over 1h30m: partition rack,od",
    ]


def test_explain_a_running_and_a_classless_job(config: RoutingConfig) -> None:
    running = explain(config, "4001", parse_text(_queue()), {}, at("10:00"))
    assert running[-1] == "RUNNING in od since 2026-11-02T07:12:00"
    (ops,) = parse_text("9|PENDING|all|ops|normal|2026-11-02T09:00:00|N/A|1|Priority|\n")
    assert explain(config, "9", [ops], {}, at("10:00"))[-1] == (
        "no class: no class recognises it and there is no default class;"
        " it stays where it was submitted (all)"
    )
    tagged = explain(config, "4102", parse_text(_queue()), {}, at("10:00"))
    assert tagged[1] == "class exp: its comment names class=exp"


def test_cli_explain_from_saved_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "queue.txt"
    saved.write_text(_queue())
    assert main(["routing", "explain", "4105", "--squeue-output", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "class training: account training" in out and "route rack: job_submit.lua sends it to rack" in out
    assert main(["routing", "explain", "999", "--squeue-output", str(saved)]) == 2
    assert capsys.readouterr().err == "job 999 is not in the queue; a finished job is in `sacct -j 999`\n"


def test_cli_explain_on_the_controller_reads_the_rendered_routing_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The controller has no cluster file: --config reads the routing.json the burst controller reads."""
    rendered = tmp_path / "routing.json"
    main(["render", "--out", str(tmp_path / "out")])
    rendered.write_text((tmp_path / "out" / "shared" / "routing" / "routing.json").read_text())
    saved = tmp_path / "queue.txt"
    saved.write_text(_queue())
    assert main(["routing", "explain", "4105", "--config", str(rendered), "--squeue-output", str(saved)]) == 0
    assert "class training: account training" in capsys.readouterr().out
    rendered.write_text("{}")
    assert main(["routing", "explain", "4105", "--config", str(rendered), "--squeue-output", str(saved)]) == 2
    assert capsys.readouterr().err.startswith(f"{rendered}: not a routing configuration (")


def test_cli_explain_without_slurm_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routing", "explain", "1", "--squeue", "/nonexistent/squeue"]) == 2
    assert "cannot read the queue" in capsys.readouterr().err


def test_cli_replay_of_the_shipped_month(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routing", "replay", "--sacct", str(SHIPPED), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    routes = {r["name"]: r for r in data["routes"]}
    assert set(routes) == {"rack", "rack_then_cloud", "spot"}
    assert routes["rack"]["cloud_gpu_hours"] == 0 and routes["spot"]["rack_gpu_hours"] == 0
    assert (
        routes["rack_then_cloud"]["cloud_gpu_hours"] > 0 and routes["rack_then_cloud"]["rack_gpu_hours"] > 0
    )
    assert 600 <= data["window_hours"] <= 800  # about a month


def test_cli_replay_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("JobID|Partition\n1|rack\n")
    assert main(["routing", "replay", "--sacct", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"{bad}:1: missing column(s) Account")
    assert main(["routing", "replay", "--sacct", str(tmp_path / "none.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err
    no_routing = str(ROOT / "clusters" / "cloud-only.yaml")
    assert main(["routing", "replay", "--sacct", str(bad), "--file", no_routing]) == 2
    assert "routing: the cluster file has no routing section" in capsys.readouterr().err


def test_the_clock_is_local(config: RoutingConfig) -> None:
    # squeue prints local times; a job submitted "now" has no age.
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    (job,) = parse_text(f"1|PENDING|rack|research|normal|{stamp}|N/A|1|Priority|\n")
    assert abs(job.submit - time.time()) < 2


def test_explain_a_job_already_widened(config: RoutingConfig) -> None:
    (job,) = parse_text("7|PENDING|rack,od|research|normal|2026-11-02T07:00:00|N/A|2|Resources|\n")
    lines = explain(config, "7", [job], {}, at("10:00"))
    assert lines[-1] == "already widened to rack,od: it starts wherever nodes free up first"
