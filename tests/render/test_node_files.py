"""The node-file table: complete, and what each change needs (the rack E2E proves the roles do it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from gpucluster.clusterfile import Cluster, load
from gpucluster.names import DCGM_JOB_MAPPING_DIR, HEALTH_PROGRAM
from gpucluster.render import render
from gpucluster.render.node_files import (
    NODE_FILES,
    Action,
    Change,
    needs,
    node_names,
    own_lines,
    role_records,
    slurm_conf_restart_reasons,
)
from tests.conftest import ROOT

TEMPLATES = ROOT / "templates"
ROLES = ROOT / "ansible" / "roles"


def test_every_template_is_one_row_of_the_table() -> None:
    templates = sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.j2"))
    assert sorted(f.template for f in NODE_FILES) == templates


def test_no_role_names_a_node_file_path_of_its_own() -> None:
    """Roles take destinations from the table (the render lookup), never from their own lists."""
    destinations = {f.destination for f in NODE_FILES if f.destination.startswith("/")} - {"/etc/hosts"}
    found = [
        f"{path.relative_to(ROLES)}: {dest}"
        for path in ROLES.rglob("*.yml")
        if path.parent.name in {"tasks", "handlers", "vars", "defaults"}
        for dest in destinations
        if dest in path.read_text()
    ]
    assert found == []


def test_role_records_carry_what_the_tasks_write(example: Cluster) -> None:
    files = render(example, "onprem", host="gpu-a01")
    records = {r["path"]: r for r in role_records("slurm_common", files)}
    assert set(records) == {
        "slurm/slurm.conf",
        "slurm/cgroup.conf",
        "slurm/topology.conf",
        "slurm/task_prolog",
        "slurm/prolog",
        "slurm/epilog",
        "net/hosts",
    }
    conf = records["slurm/slurm.conf"]
    assert (conf["dest"], conf["owner"], conf["mode"], conf["block"]) == (
        "/etc/slurm/slurm.conf",
        "root",
        "0644",
        False,
    )
    assert conf["content"] == files["slurm/slurm.conf"] and records["net/hosts"]["block"] is True
    assert [r["path"] for r in role_records("slurm_node", files)] == ["slurm/gres.conf", "health/health.json"]


def test_the_controller_writes_what_configless_nodes_fetch_and_the_power_configuration(
    example: Cluster,
) -> None:
    controller = {r["path"]: r for r in role_records("slurm_controller", render(example, "onprem"))}
    routing = {
        "routing/job_submit.lua",
        "routing/routing.json",
        "routing/gpucluster-routing.service",
        "routing/gpucluster-routing.timer",
    }
    assert set(controller) == {"slurm/gres.conf", "power/power.json", *routing}
    power = controller["power/power.json"]
    assert (power["dest"], power["group"], power["mode"]) == ("/etc/gpucluster/power.json", "slurm", "0640")
    # job_submit.lua sits beside slurm.conf, where slurmctld looks for it.
    assert controller["routing/job_submit.lua"]["dest"] == "/etc/slurm/job_submit.lua"
    timer = controller["routing/gpucluster-routing.timer"]
    assert timer["dest"] == "/etc/systemd/system/gpucluster-routing.timer"
    onprem_only = load(ROOT / "clusters" / "onprem-only.yaml").cluster
    assert [r["path"] for r in role_records("slurm_controller", render(onprem_only, "onprem"))] == [
        "slurm/gres.conf"
    ]


def test_own_gres_lines_follow_the_hostlist() -> None:
    text = (
        "AutoDetect=off\nNodeName=n[1-3] Name=gpu File=/dev/nvidia[0-7]\n"
        "NodeName=m1 Name=gpu File=/dev/nvidia0\n"
    )
    assert own_lines(text, "n2") == ["AutoDetect=off", "NodeName=n2 Name=gpu File=/dev/nvidia[0-7]"]
    assert own_lines(text, "m1") == ["AutoDetect=off", "NodeName=m1 Name=gpu File=/dev/nvidia0"]


def test_each_node_of_a_gapped_rack_finds_its_own_gres_line() -> None:
    gapped = load(ROOT / "tests" / "render" / "cases" / "gapped-rack.yaml").cluster
    files = render(gapped, "onprem", group="row-c")
    gres, slurm = files["slurm/gres.conf"], files["slurm/slurm.conf"]
    assert "NodeName=gpu-c[01,03] Name=gpu Type=a100 File=/dev/nvidia[0-3]" in gres.splitlines()
    for host in ("gpu-c01", "gpu-c03"):
        assert own_lines(gres, host) == [
            "AutoDetect=off", f"NodeName={host} Name=gpu Type=a100 File=/dev/nvidia[0-3]"
        ]  # fmt: skip
    assert own_lines(gres, "gpu-c02") == ["AutoDetect=off"]  # retired: no line of its own
    assert node_names(slurm) == {"gpu-b01", "gpu-b02", "gpu-b03", "gpu-b04", "gpu-c01", "gpu-c03"}


def test_gres_changes_on_a_gapped_rack_restart_only_the_nodes_they_concern() -> None:
    range_line = "AutoDetect=off\nNodeName=gpu-c[01-03] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
    retired = range_line.replace("gpu-c[01-03]", "gpu-c[01,03]")
    halved = retired.replace("nvidia[0-3]", "nvidia[0-1]")
    # Retiring gpu-c02 regroups the hostlist: the nodes beside it keep their own line, no restart.
    assert needs("slurm/gres.conf", Change(range_line, retired, "gpu-c03", "23.11.10")) == {Action.NONE}
    assert needs("slurm/gres.conf", Change(retired, halved, "gpu-c03", "23.11.10")) == {
        Action.SLURMD_DRAIN_RESTART
    }


def test_a_nodes_declared_hardware_change_restarts_slurmctld_before_23_11_only() -> None:
    # Slurm 22.05.8 on the test rack kept Gres=gpu:h100:8 after `scontrol reconfigure` for a change to 4.
    old = (
        "NodeName=n[1,3] CPUs=2 RealMemory=993 Gres=gpu:h100:8 State=UNKNOWN\n"
        "PartitionName=debug Nodes=n[1,3]\n"
    )
    halved = old.replace("gpu:h100:8", "gpu:h100:4")
    for version, restart in (("22.05.8", True), ("23.02.7", True), ("23.11.10", False), ("25.11.6", False)):
        actions = needs("slurm/slurm.conf", Change(old, halved, "ctl", version))
        assert (Action.SLURMCTLD_RESTART in actions) is restart, (version, actions)
        assert Action.RECONFIGURE in actions
    assert "declared hardware of n[1,3] changed (Slurm 22.05.8 < 23.11)" in slurm_conf_restart_reasons(
        Change(old, halved, "ctl", "22.05.8")
    )
    # A partition's change alone needs no restart, whatever the version.
    wider = old.replace("PartitionName=debug Nodes=n[1,3]", "PartitionName=debug Nodes=n[1,3] MaxTime=60")
    assert needs("slurm/slurm.conf", Change(old, wider, "ctl", "22.05.8")) == {Action.RECONFIGURE}


def test_a_hostlist_only_slurm_tolerates_counts_as_a_change_not_a_crash() -> None:
    # The old text comes from the node: a hand edit there may hold what expand() refuses.
    odd = "NodeName=gpu-c[01-] Name=gpu File=/dev/nvidia0\n"
    new = "NodeName=gpu-c01 Name=gpu File=/dev/nvidia0\n"
    assert needs("slurm/gres.conf", Change(odd, new, "gpu-c01", "23.11.10")) == {Action.SLURMD_DRAIN_RESTART}
    assert node_names(odd) == {"gpu-c[01-]"}


def test_a_file_the_node_lacked_or_already_holds_needs_nothing() -> None:
    assert needs("slurm/cgroup.conf", Change(None, "x\n", "n1", "22.05.8")) == {Action.NONE}
    assert needs("slurm/cgroup.conf", Change("x\n", "x\n", "n1", "22.05.8")) == frozenset()
    assert needs("slurm/cgroup.conf", Change("x\n", "y\n", "n1", "22.05.8")) == {Action.SLURMD_DRAIN_RESTART}


def test_the_table_covers_files_outside_slurm() -> None:
    assert needs("nccl/nccl.conf", Change("a\n", "b\n", "n1", "24.05.8")) == {Action.NONE}
    assert needs("slurm/topology.conf", Change("a\n", "b\n", "n1", "24.05.8")) == {Action.RECONFIGURE}


def test_task_prolog_exports_the_fabric_environment_without_overriding_the_job(
    example: Cluster, tmp_path: Path
) -> None:
    """The rendered TaskProlog, run by sh as slurmd would, prints the export lines Slurm applies."""
    files = render(example, "aws", group="p5-od")
    env_file = tmp_path / "fabric.env"
    env_file.write_text(files["nccl/fabric.env"])
    script = tmp_path / "task_prolog"
    script.write_text(files["slurm/task_prolog"].replace("/etc/gpucluster/fabric.env", str(env_file)))
    job_env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/home/u/lib", "FI_PROVIDER": "tcp"}
    out = subprocess.run(["sh", str(script)], env=job_env, capture_output=True, text=True, check=True)
    exports = dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())
    assert exports["NCCL_SOCKET_IFNAME"] == "^lo,docker"
    assert "FI_PROVIDER" not in exports  # the job chose its own provider
    assert exports["LD_LIBRARY_PATH"].startswith("/opt/amazon/ofi-nccl/lib:")
    assert exports["LD_LIBRARY_PATH"].endswith(":/home/u/lib")
    assert out.stderr == ""


def _run_job_script(script: Path, job: str, gpus: str | None) -> None:
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": job, **({"SLURM_JOB_GPUS": gpus} if gpus else {})}
    done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_prolog_and_epilog_keep_dcgm_exporters_gpu_job_map(example: Cluster, tmp_path: Path) -> None:
    files = render(example, "onprem", host="gpu-a01")
    mapping = tmp_path / "map"
    for name in ("prolog", "epilog"):
        text = files[f"slurm/{name}"]
        assert f"dir={DCGM_JOB_MAPPING_DIR}\n" in text
        (tmp_path / name).write_text(text.replace(DCGM_JOB_MAPPING_DIR, str(mapping)))
    _run_job_script(tmp_path / "prolog", "41", "0,1")
    _run_job_script(tmp_path / "prolog", "42", "1")
    _run_job_script(tmp_path / "prolog", "42", "1")  # a prolog run twice writes the job once
    _run_job_script(tmp_path / "prolog", "43", None)  # no GPUs: nothing to map
    assert {p.name: p.read_text() for p in mapping.glob("[0-9]*")} == {"0": "41\n", "1": "41\n42\n"}
    _run_job_script(tmp_path / "epilog", "41", "0,1")
    assert {p.name: p.read_text() for p in mapping.glob("[0-9]*")} == {"1": "42\n"}
    _run_job_script(tmp_path / "epilog", "42", "1")
    assert list(mapping.glob("[0-9]*")) == []


def _job_script_rc(script: Path) -> int:
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": "44", "SLURM_JOB_GPUS": "0"}
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, check=False).returncode


@pytest.mark.parametrize(("program_rc", "prolog_rc"), [(0, 0), (1, 1), (None, 0)])
def test_the_prolog_fails_exactly_where_the_health_program_took_the_node_out(
    example: Cluster, tmp_path: Path, program_rc: int | None, prolog_rc: int
) -> None:
    """Exit 1 requeues the job (nohold_on_prolog_fail); no program (an older image) lets the job run."""
    files = render(example, "onprem", host="gpu-a01")
    assert "SchedulerParameters=nohold_on_prolog_fail\n" in files["slurm/slurm.conf"]
    fake = tmp_path / "health.py"
    if program_rc is not None:
        fake.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\nexit {program_rc}\n')
        fake.chmod(0o755)
    for name in ("prolog", "epilog"):
        text = files[f"slurm/{name}"].replace(DCGM_JOB_MAPPING_DIR, str(tmp_path / "map"))
        (tmp_path / name).write_text(text.replace(HEALTH_PROGRAM, str(fake)))
    assert _job_script_rc(tmp_path / "prolog") == prolog_rc
    assert _job_script_rc(tmp_path / "epilog") == 0  # an epilog that fails drains the node: never ours
    if program_rc is not None:
        assert (tmp_path / "calls").read_text() == "--when prolog\n--when epilog\n"


def test_without_health_slurm_runs_no_health_program(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
    data["health"] = {"enabled": False}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    files = render(load(path).cluster, "onprem", host="gpu-a01")
    assert all(HEALTH_PROGRAM not in files[f"slurm/{name}"] for name in ("slurm.conf", "prolog", "epilog"))
    assert "HealthCheck" not in files["slurm/slurm.conf"]
