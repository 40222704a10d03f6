"""Prometheus's cloud targets follow the instances: the reconciler on emulated EC2; promtool reads them."""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster.power import reconcile, resume
from gpucluster.power.resume import Request
from gpucluster.power.slurm import NodeState
from tests.power.conftest import Aws, RecordingSlurm
from tests.render.test_monitoring import _promtool, needs_promtool


def _state(name: str, text: str) -> NodeState:
    base, *flags = text.split("+")
    return NodeState(name, base, frozenset(flags))


def _launch(aws: Aws, slurm: RecordingSlurm, *nodes: str) -> dict[str, str]:
    launches = resume.resume(aws.cfg, [Request(nodes)], ec2=aws.ec2, ssm=aws.ssm, slurm=slurm)
    return {n: i for launch in launches for n, i in launch.instances.items()}


def _address(aws: Aws, instance: str) -> str:
    (reservation,) = aws.ec2.describe_instances(InstanceIds=[instance])["Reservations"]
    return str(reservation["Instances"][0]["PrivateIpAddress"])


def _files(directory: Path) -> dict[str, object]:
    return {p.name: json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}


def test_each_node_with_a_live_instance_is_one_target_and_a_powered_down_one_none(
    aws: Aws, slurm: RecordingSlurm, tmp_path: Path
) -> None:
    ids = _launch(aws, slurm, "p5-od-1", "p5-od-2")
    slurm.states = {
        "p5-od-1": _state("p5-od-1", "IDLE+CLOUD"),
        "p5-od-2": _state("p5-od-2", "ALLOCATED+CLOUD"),
    }
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=tmp_path)
    assert _files(tmp_path) == {
        f"{node}.json": [
            {
                "targets": [_address(aws, ids[node])],
                "labels": {"site": "cloud", "node_group": "p5-od", "node": node},
            }
        ]
        for node in ("p5-od-1", "p5-od-2")
    }
    assert done.lines() == [
        f"prometheus target {n} at {_address(aws, ids[n])}" for n in ("p5-od-1", "p5-od-2")
    ]
    # Nothing changed: nothing is rewritten.
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=tmp_path).lines() == []
    # p5-od-1 powered down: the pass that terminates its instance removes its target.
    slurm.states["p5-od-1"] = _state("p5-od-1", "IDLE+CLOUD+POWERED_DOWN")
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=tmp_path)
    assert done.terminate == {ids["p5-od-1"]: "p5-od-1 is powered down"}
    assert "prometheus target p5-od-1 removed" in done.lines()
    assert list(_files(tmp_path)) == ["p5-od-2.json"]


def test_a_target_left_by_a_missed_suspend_is_removed_and_other_files_stay(
    aws: Aws, slurm: RecordingSlurm, tmp_path: Path
) -> None:
    (tmp_path / "p5-spot-1.json").write_text('[{"targets": ["10.100.0.9"], "labels": {}}]\n')
    (tmp_path / "README").write_text("not a target file\n")
    slurm.states = {"p5-spot-1": _state("p5-spot-1", "IDLE+CLOUD+POWERED_DOWN")}
    done = reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=tmp_path)
    assert done.lines() == ["prometheus target p5-spot-1 removed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README"]


def test_without_the_directory_monitoring_is_off_and_nothing_is_written(
    aws: Aws, slurm: RecordingSlurm, tmp_path: Path
) -> None:
    _launch(aws, slurm, "p5-od-1")
    slurm.states = {"p5-od-1": _state("p5-od-1", "IDLE+CLOUD")}
    missing = tmp_path / "file_sd"
    assert reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=missing).lines() == []
    assert not missing.exists()


@needs_promtool
def test_prometheus_accepts_the_target_files(aws: Aws, slurm: RecordingSlurm, tmp_path: Path) -> None:
    targets = tmp_path / "file_sd"
    targets.mkdir()
    _launch(aws, slurm, "p5-od-1", "p5-spot-1")
    slurm.states = {
        "p5-od-1": _state("p5-od-1", "IDLE+CLOUD"),
        "p5-spot-1": _state("p5-spot-1", "IDLE+CLOUD"),
    }
    reconcile.reconcile(aws.cfg, ec2=aws.ec2, slurm=slurm, targets_dir=targets)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f'scrape_configs:\n  - job_name: node\n    file_sd_configs:\n      - files: ["{targets}/*.json"]\n'
    )
    checked = _promtool("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # promtool reads the files: one that is not file_sd fails the same check.
    (targets / "p5-od-2.json").write_text('[{"targets": "10.100.0.7"}]\n')
    assert _promtool("check", "config", str(config)).returncode != 0
