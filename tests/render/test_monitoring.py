"""The controller's Prometheus files: promtool checks the configuration and tests the alert rules.

promtool comes from Debian's `prometheus` package; `make rack-deps` installs it, so CI runs these.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster.cli import main
from gpucluster.clusterfile import Cluster, load
from gpucluster.names import PROMETHEUS_CLOUD_TARGETS, PROMETHEUS_RULES
from gpucluster.render import render
from gpucluster.render.monitoring import retention_size_gib, series_estimate
from tests.conftest import CLUSTER_FILES, ROOT

# `make rack-deps` unpacks Debian's promtool here (Makefile: PROMTOOL); one on PATH serves as well.
UNPACKED_PROMTOOL = ROOT / "build/debs/prometheus/usr/bin/promtool"
PROMTOOL = str(UNPACKED_PROMTOOL) if UNPACKED_PROMTOOL.exists() else shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool missing: `make rack-deps` unpacks it (CI runs it), or apt-get install prometheus",
)
CONFIG = "monitoring/prometheus.yml"
RULES = "monitoring/gpucluster-alerts.rules.yml"
DEFAULTS = "monitoring/prometheus.default"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, check=False)


def _write(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    rules = tmp_path / "gpucluster.rules.yml"
    rules.write_text(files[RULES])
    config = tmp_path / "prometheus.yml"
    config.write_text(files[CONFIG].replace(PROMETHEUS_RULES, str(rules)))
    return config, rules


@needs_promtool
@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.stem)
def test_promtool_accepts_the_config_and_rules_of_every_shipped_cluster(path: Path, tmp_path: Path) -> None:
    files = render(load(path).cluster, "onprem")
    config, rules = _write(tmp_path, files)
    checked = _promtool("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert _promtool("check", "rules", str(rules)).returncode == 0


def _jobs(cluster: Cluster) -> dict[str, dict[str, Any]]:
    config = yaml.safe_load(render(cluster, "onprem")[CONFIG])
    return {job["job_name"]: job for job in config["scrape_configs"]}


def _with_slurm(cluster: Cluster, version: str) -> Cluster:
    return cluster.model_copy(update={"versions": cluster.versions.model_copy(update={"slurm": version})})


def test_rack_nodes_are_static_targets_and_cloud_nodes_come_from_file_sd(example: Cluster) -> None:
    config = yaml.safe_load(render(example, "onprem")[CONFIG])
    jobs = _jobs(example)
    first = jobs["dcgm"]["static_configs"][0]
    assert first == {
        "targets": ["10.10.1.11:9400"],
        "labels": {"site": "rack", "node_group": "rack-a", "node": "gpu-a01"},
    }
    assert len(jobs["dcgm"]["static_configs"]) == 8
    assert jobs["node"]["file_sd_configs"] == [{"files": [f"{PROMETHEUS_CLOUD_TARGETS}/*.json"]}]
    assert config["rule_files"] == [PROMETHEUS_RULES] and config["global"]["scrape_interval"] == "30s"


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.stem)
def test_service_hosts_are_node_exporter_targets_only(path: Path) -> None:
    cluster = load(path).cluster
    jobs = _jobs(cluster)
    hosts = cluster.onprem.service_hosts if cluster.onprem else []
    node = [c for c in jobs["node"].get("static_configs", []) if c["labels"]["node_group"] == "service"]
    service = {"site": "rack", "node_group": "service"}
    assert node == [{"targets": [f"{h.address}:9100"], "labels": {**service, "node": h.name}} for h in hosts]
    dcgm = [c["labels"]["node"] for c in jobs["dcgm"].get("static_configs", [])]
    assert not {h.name for h in hosts} & set(dcgm)


def test_slurm_25_11_is_scraped_on_the_controllers_slurmctld_port(example: Cluster) -> None:
    jobs = _jobs(example)
    slurm = {name: job for name, job in jobs.items() if name.startswith("slurm_")}
    assert {name: job["metrics_path"] for name, job in slurm.items()} == {
        "slurm_jobs": "/metrics/jobs",
        "slurm_nodes": "/metrics/nodes",
        "slurm_partitions": "/metrics/partitions",
        "slurm_scheduler": "/metrics/scheduler",
    }
    for job in slurm.values():
        # head01's address at SlurmctldPort; no `node` target label, which would push slurmctld's own
        # per-node `node` label aside (exported_node).
        assert job["static_configs"] == [{"targets": ["10.10.0.10:6817"], "labels": {"instance": "head01"}}]
        assert job["scrape_interval"] == "60s"
    moved = example.model_copy(update={"slurm": example.slurm.model_copy(update={"slurmctld_port": 7817})})
    assert _jobs(moved)["slurm_nodes"]["static_configs"][0]["targets"] == ["10.10.0.10:7817"]


def test_no_slurm_jobs_before_25_11_or_without_an_onprem_controller(example: Cluster) -> None:
    old = render(_with_slurm(example, "22.05.8"), "onprem")[CONFIG]
    assert set(_jobs(_with_slurm(example, "22.05.8"))) == {"node", "dcgm"}
    comment = " ".join(line.strip().removeprefix("# ") for line in old.splitlines()[-2:])
    assert comment == (
        "No Slurm jobs: Slurm 22.05.8 < 25.11 has no built-in metrics (MetricsType) and Debian 12 ships no"
        " Slurm exporter package."
    )
    assert set(_jobs(_with_slurm(example, "25.05.3"))) == {"node", "dcgm"}
    cloud = load(ROOT / "clusters" / "cloud-only.yaml").cluster
    assert cloud.versions.slurm == "25.11.6"
    assert set(_jobs(cloud)) == {"node", "dcgm"}
    skipped = "# No Slurm jobs: the controller head is no on-prem service host."
    assert skipped in render(cloud, "onprem")[CONFIG]


@needs_promtool
@pytest.mark.parametrize("version", ["25.11.6", "22.05.8"])
def test_promtool_accepts_the_config_with_and_without_slurm_jobs(
    example: Cluster, version: str, tmp_path: Path
) -> None:
    cluster = _with_slurm(example, version)
    assert ("slurm_nodes" in _jobs(cluster)) == (version == "25.11.6")
    config, _ = _write(tmp_path, render(cluster, "onprem"))
    checked = _promtool("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_retention_is_35_days_and_sized_from_the_series(example: Cluster) -> None:
    text = render(example, "onprem")[DEFAULTS]
    # 8 rack + 12 cloud nodes × (1500 + 8 × 40) series = 36,400, head01's node exporter 1,500, slurmctld's
    # 120 + 7 partitions (5 and 2 power) × 70 + 28 declared nodes × 10 = 890: 38,790 series every 30 s for
    # 35 d at 2 B × 1.5 ≈ 10.9 GiB
    assert series_estimate(example) == 20 * (1500 + 8 * 40) + 1500 + 120 + 7 * 70 + 28 * 10
    assert retention_size_gib(38_790, 30, 35) == 11
    assert 'ARGS="--storage.tsdb.retention.time=35d --storage.tsdb.retention.size=11GB"' in text


def _alert_test(rules: Path) -> str:
    """Series and expectations, one minute per value; see promtool's unit-testing-rules docs."""
    rack = 'site="rack",node_group="rack-a"'
    od = 'site="cloud",node_group="p5-od"'
    gpu = 'node="gpu-a01",Hostname="gpu-a01",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3"'
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": f'up{{job="node",{rack},node="gpu-a01"}}', "values": "1 0x40"},
                    {"series": f'up{{job="node",{rack},node="gpu-a02"}}', "values": "1x40"},
                    # powered up, never registered: alerts only after resume_timeout_s (900 s)
                    {"series": f'up{{job="node",{od},node="p5-od-1"}}', "values": "0x40"},
                    # powered down at 3 m: its file_sd file is gone, so no series and no alert
                    {"series": f'up{{job="node",{od},node="p5-od-2"}}', "values": "1 1 1 _x37"},
                    {"series": f'DCGM_FI_DEV_XID_ERRORS{{{rack},{gpu},gpu="0"}}', "values": "0 0 79x38"},
                    {
                        "series": f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{rack},{gpu},gpu="0"}}',
                        "values": "0 0 0 1x37",
                    },
                    {"series": f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{rack},{gpu},gpu="1"}}', "values": "3x40"},
                    {
                        "series": f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{rack},{gpu},gpu="0",hpc_job="4711"}}',
                        "values": "0.01x40",
                    },
                    {
                        "series": f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{rack},{gpu},gpu="1",hpc_job="4712"}}',
                        "values": "0.9x40",
                    },
                    {"series": f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{rack},{gpu},gpu="2"}}', "values": "0x40"},
                ]
                + [
                    {
                        "series": f'up{{job="node",site="cloud",node_group="p5-spot",node="p5-spot-{n}"}}',
                        "values": "1x40",
                    }
                    for n in range(1, 4)
                ],
                "alert_rule_test": _expectations(),
            }
        ],
    }
    return yaml.safe_dump(tests, sort_keys=False)


def _fires(at: str, name: str, labels: dict[str, str], summary: str) -> dict[str, object]:
    return {
        "eval_time": at,
        "alertname": name,
        "exp_alerts": [{"exp_labels": labels, "exp_annotations": {"summary": summary}}],
    }


def _quiet(at: str, name: str) -> dict[str, object]:
    return {"eval_time": at, "alertname": name, "exp_alerts": []}


def _expectations() -> list[dict[str, object]]:
    node = {"job": "node", "severity": "critical"}
    rack_a01 = {**node, "site": "rack", "node_group": "rack-a", "node": "gpu-a01"}
    od_1 = {**node, "site": "cloud", "node_group": "p5-od", "node": "p5-od-1"}
    gpu = {"site": "rack", "node_group": "rack-a", "node": "gpu-a01", "Hostname": "gpu-a01", "UUID": "GPU-a"}
    gpu |= {"modelName": "NVIDIA H100 80GB HBM3", "severity": "critical", "gpu": "0"}
    idle = {**gpu, "hpc_job": "4711", "severity": "warning"}
    return [
        _quiet("4m", "RackNodeDown"),
        _fires("7m", "RackNodeDown", rack_a01, "rack node gpu-a01 (rack-a) not scraped for 5 minutes"),
        _quiet("10m", "CloudNodeDown"),
        _fires(
            "16m", "CloudNodeDown", od_1, "cloud node p5-od-1 (p5-od) powered up but not scraped for 900 s"
        ),
        _quiet("1m", "GpuXidError"),
        _fires("3m", "GpuXidError", gpu, "XID 79 on gpu-a01 GPU 0 (GPU-a)"),
        _quiet("2m", "GpuEccDoubleBitError"),
        _fires("5m", "GpuEccDoubleBitError", gpu, "uncorrectable ECC errors on gpu-a01 GPU 0 (GPU-a)"),
        _quiet("25m", "GpuIdleWhileAllocated"),
        _fires(
            "35m",
            "GpuIdleWhileAllocated",
            idle,
            "job 4711 holds gpu-a01 GPU 0 with its engine under 5% active for 30 minutes",
        ),
        _quiet("35m", "BurstCapReached"),  # p5-spot runs 3 of its 8
    ]


@needs_promtool
def test_the_alert_rules_fire_when_and_only_when_they_should(example: Cluster, tmp_path: Path) -> None:
    _, rules = _write(tmp_path, render(example, "onprem"))
    spec = tmp_path / "alerts.test.yml"
    spec.write_text(_alert_test(rules))
    tested = _promtool("test", "rules", str(spec))
    assert tested.returncode == 0, tested.stdout + tested.stderr


@needs_promtool
def test_the_burst_cap_fires_once_a_group_runs_max_count_nodes(example: Cluster, tmp_path: Path) -> None:
    _, rules = _write(tmp_path, render(example, "onprem"))
    series = [
        {"series": f'up{{job="node",site="cloud",node_group="p5-od",node="p5-od-{n}"}}', "values": "1x20"}
        for n in range(1, 5)
    ]
    labels = {"node_group": "p5-od", "severity": "info"}
    summary = "p5-od runs all 4 nodes it may (aws.capacity max_count); more cloud jobs wait"
    spec = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    _quiet("5m", "BurstCapReached"),
                    _fires("12m", "BurstCapReached", labels, summary),
                ],
            }
        ],
    }
    path = tmp_path / "burst.test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    tested = _promtool("test", "rules", str(path))
    assert tested.returncode == 0, tested.stdout + tested.stderr


@needs_promtool
def test_a_service_host_down_is_a_rack_node_down(example: Cluster, tmp_path: Path) -> None:
    _, rules = _write(tmp_path, render(example, "onprem"))
    service = {"job": "node", "site": "rack", "node_group": "service", "node": "head01"}
    labels = ",".join(f'{k}="{v}"' for k, v in service.items())
    spec = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": f"up{{{labels}}}", "values": "1 0x20"}],
                "alert_rule_test": [
                    _quiet("4m", "RackNodeDown"),
                    _fires(
                        "7m",
                        "RackNodeDown",
                        {**service, "severity": "critical"},
                        "rack node head01 (service) not scraped for 5 minutes",
                    ),
                ],
            }
        ],
    }
    path = tmp_path / "service.test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    tested = _promtool("test", "rules", str(path))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_a_retention_under_35_days_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    data["monitoring"] = {"retention_days": 28}
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "monitoring.retention_days" in err and "35" in err
