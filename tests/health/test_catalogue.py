"""The health catalogue of each node group, from the shipped cluster files and edits of them."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpucluster.clusterfile import load
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.nodes import node_groups
from gpucluster.health.catalogue import budget_s, catalogue, prolog_epilog_timeout_s
from gpucluster.health.node_program import CHECKS

ROOT = Path(__file__).resolve().parents[2]


def _example(tmp_path: Path, **health: object) -> Cluster:
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    if health:
        data["health"] = health
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return load(path).cluster


def _groups(cluster: Cluster) -> dict[str, dict[str, object]]:
    return {g.name: catalogue(cluster, g) for g in node_groups(cluster)}


def test_an_nvswitch_rack_checks_links_and_fabric_manager_and_the_driver_pin(tmp_path: Path) -> None:
    cluster = _example(tmp_path)
    rack = _groups(cluster)["rack-a"]
    checks = {c["name"]: c for c in rack["checks"]}  # type: ignore[attr-defined]
    assert list(checks) == ["gpus", "ecc", "xid", "nvlink", "fabric_manager", "dcgm_diag", "memory", "clock"]
    assert checks["gpus"] == {
        "name": "gpus",
        "when": ["prolog", "epilog", "periodic"],
        "count": 8,
        "model": "NVIDIA H100 80GB HBM3",
        "driver": cluster.versions.nvidia_driver,
    }
    assert checks["dcgm_diag"]["when"] == ["periodic"] and checks["nvlink"]["when"] == ["epilog", "periodic"]
    assert (rack["site"], rack["reason_prefix"]) == ("rack", "gpucluster-health: ")
    assert set(checks) <= set(CHECKS)  # every check the catalogue names, the node program runs


def test_cloud_groups_are_cloud_and_every_group_gets_the_prolog_within_a_minute(tmp_path: Path) -> None:
    groups = _groups(_example(tmp_path))
    assert {name: entry["site"] for name, entry in groups.items()} == {
        "rack-a": "rack",
        "rack-b": "rack",
        "p5-od": "cloud",
        "p5-spot": "cloud",
    }
    # nvidia-smi (gpus, ecc), journalctl (xid), systemctl (fabric manager): 10 + 10 + 5 s at most; the
    # epilog adds nvidia-smi nvlink. Slurm's timeout adds two scontrol calls (20 s each) and 10 s.
    assert {budget_s(entry, "prolog") for entry in groups.values()} == {25.0}
    assert {budget_s(entry, "epilog") for entry in groups.values()} == {35.0}
    assert prolog_epilog_timeout_s(list(groups.values())) == 35 + 40 + 10
    # The periodic pass adds DCGM's quick diagnostic (120 s) and timedatectl: past slurmd's 60 s for a
    # HealthCheckProgram, which is why the program detaches from slurmd there (docs/health.md).
    assert {budget_s(entry, "periodic") for entry in groups.values()} == {35.0 + 120 + 5}


def test_mounts_skips_and_the_quick_or_medium_diagnostic_come_from_the_cluster_file(tmp_path: Path) -> None:
    cluster = _example(
        tmp_path, mounts=["/home", "/datasets"], skip=["clock"], dcgm_diag_level=2, tool_limit_s=20
    )
    rack = _groups(cluster)["rack-b"]
    checks = {c["name"]: c for c in rack["checks"]}  # type: ignore[attr-defined]
    assert "clock" not in checks and checks["mounts"]["paths"] == ["/home", "/datasets"]
    assert checks["dcgm_diag"]["level"] == 2 and rack["limits"]["dcgmi"] == 900  # type: ignore[index]
    assert budget_s(rack, "prolog") == 45.0


def test_a_userspace_profile_checks_its_gpus_but_not_a_driver_it_does_not_install(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    data["onprem"]["profiles"]["dgx-h100"]["install_mode"] = "userspace"
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    rack = _groups(load(path).cluster)["rack-a"]
    assert rack["checks"][0]["driver"] == ""  # type: ignore[index]
