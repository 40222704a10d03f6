"""GPU utilization from `sacct --parsable2` output, against a hand-counted sample.

tests/cost/sacct/example-day.txt is constructed, not recorded: it follows the format of
`sacct --allusers --allocations --parsable2 -o JobID,Partition,AllocTRES,Elapsed,Start,End,State`
(Slurm 22.05) with jobs of known GRES and duration on clusters/example.yaml's partitions.
Hand count over 2026-11-02 00:00–24:00 (24 h): rack 80 + 384 + 8 = 472 of 64 × 24 = 1,536 GPU-h;
cloud 96 of 96 × 24 = 2,304; all 20 of 160 × 24 = 3,840; the cluster 588 of 3,840 = 15.3%.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from gpucluster.cli import main
from gpucluster.clusterfile import Cluster
from gpucluster.cost.utilization import (
    SacctError,
    elapsed_s,
    gpus_in_tres,
    parse_sacct,
    partition_gpus,
    utilization_by_partition,
)
from tests.conftest import ROOT

SAMPLE = ROOT / "tests" / "cost" / "sacct" / "example-day.txt"
DAY = (datetime(2026, 11, 2), datetime(2026, 11, 3))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:10:00", 600), ("1-02:03:04", 93_784), ("10:30", 630), ("3-00:00:00", 259_200), ("00:00:01.5", 1.5)],
)
def test_elapsed(text: str, seconds: float) -> None:
    assert elapsed_s(text) == seconds


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=64,cpu=64,gres/gpu=8,mem=512G,node=1", 8),
        ("billing=8,cpu=8,gres/gpu:h100=4,gres/gpu=4,mem=64G,node=1", 4),
        ("cpu=8,gres/gpu:h100=2,gres/gpu:a100=1,node=1", 3),
        ("cpu=8,mem=64G,node=1", 0),
        ("", 0),
    ],
)
def test_gpus_in_tres(tres: str, gpus: int) -> None:
    assert gpus_in_tres(tres) == gpus


def test_sample_parses_jobs_not_steps() -> None:
    jobs = parse_sacct(SAMPLE.read_text())
    assert [j.job_id for j in jobs] == ["1001", "1002", "1003", "1005", "1006"]
    running = jobs[-1]
    assert running.end == datetime(2026, 11, 3, 3)  # End=Unknown: start + Elapsed


def test_sample_utilization_by_hand(example: Cluster) -> None:
    gpus = partition_gpus(example)
    # od and spot are the routing section's partitions (4 p5-od × 8, 8 p5-spot × 8).
    assert gpus == {"rack": 64, "cloud": 96, "all": 160, "od": 32, "spot": 64}
    rows = {r.partition: r for r in utilization_by_partition(parse_sacct(SAMPLE.read_text()), gpus, *DAY)}
    assert rows["rack"].allocated_gpu_hours == pytest.approx(472)
    assert rows["rack"].utilization == pytest.approx(472 / 1536)
    assert rows["cloud"].utilization == pytest.approx(96 / 2304)
    assert rows["all"].available_gpu_hours == pytest.approx(3840)


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "utilization",
        "--sacct",
        str(SAMPLE),
        "--start",
        "2026-11-02T00:00:00",
        "--end",
        "2026-11-03T00:00:00",
    ]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["window"]["hours"] == 24
    assert data["overall"] == pytest.approx(588 / 3840)
    assert main(args) == 0
    assert "15.3%" in capsys.readouterr().out


def test_cli_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(SAMPLE.read_text()))
    assert main(["utilization", "--sacct", "-"]) == 0
    assert "5 GPU job(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("JobID|Partition|Elapsed\n1|rack|01:00:00\n", "missing column(s) AllocTRES, Start"),
        (
            "JobID|Partition|AllocTRES|Elapsed|Start|End|State\n1|rack|gres/gpu=8|xx|2026-11-02T00:00:00|Unknown|RUNNING\n",
            ":2: not a Slurm elapsed time",
        ),
        (
            "JobID|Partition|AllocTRES|Elapsed|Start|End|State\n1|rack|gres/gpu=8|01:00:00|noon|Unknown|RUNNING\n",
            ":2: Invalid isoformat",
        ),
    ],
)
def test_bad_sacct_is_named_by_line(text: str, message: str) -> None:
    with pytest.raises(SacctError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_sacct(text, "sacct.txt")


def test_cli_bad_sacct_exits_two(
    capsys: pytest.CaptureFixture[str], tmp_path: pytest.TempPathFactory
) -> None:
    bad = ROOT / "tests" / "cost" / "sacct" / "no-gpu-tres.txt"
    assert main(["utilization", "--sacct", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "AccountingStorageTRES=gres/gpu" in err and "Traceback" not in err
    assert (
        main(
            [
                "utilization",
                "--sacct",
                str(SAMPLE),
                "--start",
                "2026-11-03T00:00:00",
                "--end",
                "2026-11-02T00:00:00",
            ]
        )
        == 2
    )
    assert "--start" in capsys.readouterr().err
