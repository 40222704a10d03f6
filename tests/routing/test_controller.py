"""The controller's pass against stand-in squeue, sacct and scontrol programs (the real ones' output)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.routing.config import RoutingConfig
from gpucluster.routing.controller import Commands, main, month_start, run_pass
from tests.conftest import ROOT
from tests.routing.conftest import at, without_budgets

SAMPLES = Path(__file__).parent / "samples"


def _program(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def slurm(tmp_path: Path) -> Commands:
    """squeue answers from the samples; scontrol records its arguments; sacct reports $1200 of exp."""
    shutil.copy(SAMPLES / "squeue-pending.txt", tmp_path / "pending")
    shutil.copy(SAMPLES / "squeue-running.txt", tmp_path / "running")
    squeue = _program(
        tmp_path / "squeue",
        f'echo "$SLURM_TIME_FORMAT $@" >> {tmp_path}/squeue.calls\n'
        f'case "$*" in *--start*) cat {tmp_path}/pending ;; *) cat {tmp_path}/running ;; esac\n',
    )
    scontrol = _program(tmp_path / "scontrol", f'echo "$@" >> {tmp_path}/scontrol.calls\n')
    sacct = _program(
        tmp_path / "sacct",
        f'echo "$@" >> {tmp_path}/sacct.calls\n'
        'echo "JobID|Partition|Account|QOS|Submit|Start|End|Elapsed|NNodes|AllocTRES|State|Comment"\n'
        'echo "1|od|research|normal|2026-11-01T00:00:00|2026-11-01T00:00:00|2026-11-01T06:00:00|06:00:00'
        '|20|gres/gpu=160|COMPLETED|"\n',
    )
    return Commands(squeue=squeue, scontrol=scontrol, sacct=sacct)


def test_a_pass_widens_what_the_policy_says(
    config: RoutingConfig,
    slurm: Commands,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")  # a login shell's setting must not reach the parsers
    unbudgeted = without_budgets(config)
    decisions = run_pass(unbudgeted, slurm, at("10:00"))
    assert [d.action for d in decisions] == ["widen", "cap", "wait", "wait", "wait"]
    assert (tmp_path / "scontrol.calls").read_text() == "update jobid=4101 partition=rack,od\n"
    assert not (tmp_path / "sacct.calls").exists()  # no class has a budget: no sacct call
    calls = (tmp_path / "squeue.calls").read_text().splitlines()
    assert calls[0].startswith("standard --start --noheader --states=PENDING -o %i|%T|%P|")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "job 4101 class exp expected wait 3h00m: widen: over 1h30m: partition rack,od"


def test_the_month_spend_comes_from_sacct(config: RoutingConfig, slurm: Commands, tmp_path: Path) -> None:
    # 20 nodes × 6 h × $10 = $1200 this month, over exp's $1000: nothing is widened.
    decisions = run_pass(config, slurm, at("10:00"))
    assert decisions[0].action == "budget" and not (tmp_path / "scontrol.calls").exists()
    (call,) = (tmp_path / "sacct.calls").read_text().splitlines()
    assert "-S 2026-11-01T00:00:00 -E now --partition=od,spot -o JobID,Partition,Account,QOS" in call
    assert month_start(at("10:00")) == at("00:00", day=1)


def test_a_job_that_started_meanwhile_is_logged_not_fatal(
    config: RoutingConfig, slurm: Commands, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = _program(
        tmp_path / "scontrol", 'echo "scontrol: error: Job is no longer pending execution" >&2; exit 1\n'
    )
    unbudgeted = without_budgets(config)
    run_pass(unbudgeted, Commands(squeue=slurm.squeue, scontrol=failing, sacct=slurm.sacct), at("10:00"))
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("(scontrol failed: scontrol: error: Job is no longer pending execution)")


def test_main_reports_a_missing_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "routing.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gpucluster-routing: {tmp_path}/routing.json:") and "Traceback" not in err


def test_main_reports_a_failing_squeue(
    config: RoutingConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "routing.json"
    path.write_text(config.to_json())
    squeue = _program(
        tmp_path / "squeue", 'echo "slurm_load_jobs error: Unable to contact slurm controller" >&2; exit 1\n'
    )
    assert main(["--config", str(path), "--squeue", squeue]) == 1
    assert "Unable to contact slurm controller" in capsys.readouterr().err


def test_the_controller_imports_neither_the_cost_nor_the_cluster_file_model() -> None:
    # A pass runs every minute: importing pydantic models it does not use tripled its time (bench/routing.py).
    code = (
        "import sys, gpucluster.routing.controller\n"
        "heavy = [m for m in ('pydantic', 'gpucluster.clusterfile', 'gpucluster.cost') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == ""
