"""End to end on real daemons: converge a 4-node rack with ansible/site.yml and use Slurm on it.

The tests run in file order and share one rack; each step builds on the previous one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import yaml

from gpucluster import names
from gpucluster.accept.admission import AWAITING_REASON
from gpucluster.clusterfile import load
from gpucluster.clusterfile.nodes import node_groups
from gpucluster_rack import healthy_probes
from gpucluster_rack.handlers import handlers_run, predicted
from gpucluster_rack.playbook import converge
from gpucluster_rack.rack import Rack
from gpucluster_rack.slurm_state import slurm_nodes, wait_for
from tests.conftest import ROOT


def _squeue_state(rack: Rack, job: str) -> str:
    return rack.ssh("ctl", f"squeue -h -j {job} -o %T", check=False).strip()


def _running_job(rack: Rack, sbatch_args: str) -> str:
    """Submit `sleep 600` and wait until it runs; return its job id."""
    job = rack.ssh("ctl", f"sbatch --parsable {sbatch_args} --wrap 'sleep 600'").strip()
    deadline = time.monotonic() + 30
    while _squeue_state(rack, job) != "RUNNING" and time.monotonic() < deadline:
        time.sleep(1)
    assert _squeue_state(rack, job) == "RUNNING"
    return job


def test_a_slurm_pin_the_distribution_cannot_meet_is_refused_before_anything_is_installed(rack: Rack) -> None:
    # Acceptance summaries cover every report in the directory: none may be left from an earlier run.
    shutil.rmtree(
        ROOT / "build" / "accept" / yaml.safe_load(rack.cluster_file.read_text())["name"], ignore_errors=True
    )
    original = rack.cluster_file.read_text()
    cluster = yaml.safe_load(original)
    cluster["versions"]["slurm"] = "24.05.8"  # Debian 12 ships 22.05.8
    rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))
    try:
        run = converge(rack)
    finally:
        rack.cluster_file.write_text(original)
    assert run.rc != 0
    assert (
        "versions.slurm pins 24.05.8, but the distribution packages on ctl offer slurm-client 22.05.8-"
        in (" ".join(run.output.split()))
    ), run.output[-3000:]
    for node in ("ctl", "n1", "n2", "n3"):
        listed = rack.ssh(
            node, "dpkg-query -W -f '${db:Status-Abbrev}${Package}\\n' 2>/dev/null", check=False
        )
        installed = {line[3:] for line in listed.splitlines() if line.startswith("ii")}
        assert not installed & {"munge", "slurm-client", "slurmd", "slurmctld", "slurmdbd"}, (node, installed)


def test_first_converge_succeeds(rack: Rack) -> None:
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    assert set(run.recap()) == {"ctl", "n1", "n2", "n3"}
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in run.recap().values())


def _accept(rack: Rack, healthy: list[int]) -> dict[str, dict[str, object]]:
    """Run accept.yml with the healthy samples on the given nodes; return the node reports by host."""
    run, hosts = healthy_probes.accept(rack, healthy)
    assert run.rc == 0, run.output[-3000:]
    return hosts


def test_new_nodes_register_drained_awaiting_acceptance(rack: Rack) -> None:
    """Nothing runs on a node before its hardware checks pass: slurmd registers it drained."""
    wait_for(
        "three registered nodes",
        lambda: {s for s, _ in slurm_nodes(rack, "n1", "n2", "n3").values()} == {"IDLE+DRAIN"},
    )
    assert slurm_nodes(rack, "n1", "n2", "n3") == dict.fromkeys(
        ["n1", "n2", "n3"], ("IDLE+DRAIN", AWAITING_REASON)
    )
    refused = rack.ssh("ctl", "srun --immediate=5 -N1 true 2>&1", check=False)
    assert "Unable to allocate resources" in refused, refused


def test_the_fabric_gate_fails_clearly_where_mpi_cannot_launch_and_the_nodes_stay_drained(rack: Rack) -> None:
    """Every per-node check passes (healthy probes), but no tested node has PMIx (gpu_nccl's OpenMPI brings
    it; the rack has no CUDA repository): srun --mpi=pmix cannot launch, so no pair passes."""
    hosts = _accept(rack, healthy=[1, 2, 3])
    assert {h: (r["passed"], r["failed_checks"]) for h, r in hosts.items()} == dict.fromkeys(
        ["n1", "n2", "n3"], (False, ["nccl_multi_node"])
    )
    name = yaml.safe_load(rack.cluster_file.read_text())["name"]
    report = json.loads((ROOT / "build" / "accept" / name / "n1.json").read_text())
    (multi,) = [c for c in report["checks"] if c["name"] == "nccl_multi_node"]
    assert multi["found"] == "every pair failed, so no one node or link is to blame (n1+n2: no result)"
    assert "srun all_reduce_perf: srun: error: mpi/pmix_v4: init:" in multi["message"], multi
    assert "can not load PMIx library" in multi["message"], multi
    runs = json.loads((ROOT / "build" / "accept" / name / "_fabric.observations.json").read_text())
    ran = [(r["name"], r["rc"]) for r in runs["runs"]]
    assert ran == [("all", 1), ("n1+n2", 1), ("n2+n3", 1), ("n3+n1", 1)], ran
    for node, (state, reason) in slurm_nodes(rack, "n1", "n2", "n3").items():
        assert state == "IDLE+DRAIN", node
        assert reason.startswith("gpucluster accept: nccl_multi_node: expected"), reason
    assert "No reservations in the system" in rack.ssh("ctl", "scontrol show reservation")


def test_acceptance_admits_the_nodes_that_pass(rack: Rack) -> None:
    # What gpu_nccl's OpenMPI brings on a node with CUDA: Debian's mpi/pmix_v4 plugin dlopens the unversioned
    # libpmix.so of libpmix-dev (libpmix2 alone still fails), so srun --mpi=pmix launches the healthy probes.
    # slurmd loads the plugin when it starts, so the role restarts a slurmd that ran before (its handler);
    # without that the launch failed ("_send_slurmstepd_init failed") and slurmd stopped answering.
    install = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libpmix-dev"
    for node in ("n1", "n2", "n3"):
        rack.ssh(node, f"{install} && systemctl restart slurmd")
    hosts = _accept(rack, healthy=[1, 2, 3])
    assert {h: (r["passed"], r["admission"]) for h, r in hosts.items()} == dict.fromkeys(
        ["n1", "n2", "n3"], (True, "passed: its acceptance drain is lifted")
    )
    name = yaml.safe_load(rack.cluster_file.read_text())["name"]
    report = json.loads((ROOT / "build" / "accept" / name / "n2.json").read_text())
    (multi,) = [c for c in report["checks"] if c["name"] == "nccl_multi_node"]
    assert multi["status"] == "pass" and multi["found"].startswith("lowest peak busbw 359.02 GB/s"), multi
    assert "No reservations in the system" in rack.ssh("ctl", "scontrol show reservation")


def test_sinfo_shows_three_idle_compute_nodes(rack: Rack) -> None:
    deadline = time.monotonic() + 60
    while rack.ssh("ctl", "sinfo -h -t idle -o %D").strip() != "3" and time.monotonic() < deadline:
        time.sleep(1)
    assert rack.ssh("ctl", "sinfo -h -t idle -o %D").strip() == "3", rack.ssh("ctl", "sinfo -R; sinfo")


def test_slurm_is_installed_at_the_pin_and_held(rack: Rack) -> None:
    for node, daemons in (
        ("ctl", ["slurm-client", "slurmctld", "slurmdbd"]),
        ("n1", ["slurm-client", "slurmd"]),
    ):
        versions = dict(
            line.split() for line in rack.ssh(node, f"dpkg-query -W {' '.join(daemons)}").splitlines()
        )
        assert all(v.startswith("22.05.8-") for v in versions.values()), versions
        assert set(daemons) <= set(rack.ssh(node, "apt-mark showhold").split())
    assert rack.ssh("n1", "slurmd -V").split()[-1] == "22.05.8"
    upgrade = rack.ssh("n1", "apt-get -s -o Debug::NoLocking=1 upgrade")
    assert not [line for line in upgrade.splitlines() if line.startswith("Inst ") and "slurm" in line]


def test_srun_runs_on_three_distinct_nodes(rack: Rack) -> None:
    names = rack.ssh("ctl", "srun -N3 hostname").split()
    assert sorted(names) == ["n1", "n2", "n3"]


def test_every_task_gets_its_node_groups_fabric_environment(rack: Rack) -> None:
    """slurm.conf's TaskProlog hands /etc/gpucluster/fabric.env to tasks; a job's own value wins."""
    fabric = dict(
        line.split("=", 1)
        for line in rack.ssh("n1", "cat /etc/gpucluster/fabric.env").splitlines()
        if line and not line.startswith("#")
    )
    assert {"NCCL_IB_HCA", "UCX_NET_DEVICES"} <= set(fabric), fabric
    task_env = rack.ssh("ctl", "srun -w n1 env").splitlines()
    assert all(f"{name}={value}" in task_env for name, value in fabric.items()), task_env
    own = rack.ssh("ctl", "NCCL_IB_HCA=mlx5_9 srun -w n1 printenv NCCL_IB_HCA").strip()
    assert own == "mlx5_9"


def test_gres_allocates_two_declared_gpus(rack: Rack) -> None:
    assert rack.ssh("ctl", "srun --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES").strip() == "0,1"
    refused = rack.ssh("ctl", "srun --immediate=5 --gres=gpu:9 true 2>&1", check=False)
    assert "Requested node configuration is not available" in refused


def test_the_prolog_maps_a_jobs_gpus_for_dcgm_exporter_and_the_epilog_clears_them(rack: Rack) -> None:
    """slurmd runs the rendered Prolog at allocation with the job's GPUs and the Epilog at its end."""
    mapping = names.DCGM_JOB_MAPPING_DIR
    job = _running_job(rack, "-w n1 --gres=gpu:2")
    try:
        shown = rack.ssh("n1", f"grep -H . {mapping}/[0-9]*", check=False).split()
        assert sorted(shown) == [f"{mapping}/0:{job}", f"{mapping}/1:{job}"], shown
    finally:
        rack.ssh("ctl", f"scancel {job}")
    deadline = time.monotonic() + 60
    while rack.ssh("n1", f"ls {mapping}/ | grep -c '^[0-9]'", check=False).strip() != "0":
        assert time.monotonic() < deadline, rack.ssh("n1", f"ls -l {mapping}/", check=False)
        time.sleep(1)
    state, reason = slurm_nodes(rack, "n1")["n1"]
    assert "DRAIN" not in state and state.startswith(("IDLE", "MIXED")), (state, reason)  # no script failed


def test_jobs_take_slurmds_locked_memory_limit_not_the_submitting_shells(rack: Rack) -> None:
    # RDMA pins memory: a login shell's 64 KiB limit must not reach the job (PropagateResourceLimitsExcept).
    # slurmd's own limit is its unit's LimitMEMLOCK=infinity where the machine allows it (docs/slurm.md).
    slurmd = rack.ssh("n1", "grep 'Max locked memory' /proc/$(pidof slurmd)/limits").split()[3]
    expected = "unlimited" if slurmd == "unlimited" else str(int(slurmd) // 1024)
    assert (
        rack.ssh("ctl", "ulimit -S -l 64 && srun -N1 -w n1 bash -c 'ulimit -l'").strip() == expected != "64"
    )


def test_every_host_runs_chrony_where_the_clock_may_be_set(rack: Rack) -> None:
    for host in ("ctl", "n1"):
        shown = rack.ssh(host, "systemctl show chrony -p UnitFileState -p ConditionResult -p ActiveState")
        # Enabled everywhere; inside nspawn the unit's CAP_SYS_TIME condition keeps it from running.
        assert {"UnitFileState=enabled", "ConditionResult=no", "ActiveState=inactive"} <= set(
            shown.split()
        ), shown
        sources = rack.ssh(host, "cat /etc/chrony/sources.d/gpucluster.sources")
        assert f"server {rack.node(0).address} iburst" in sources.splitlines(), sources


def test_sacct_lists_the_jobs_from_slurmdbd(rack: Rack) -> None:
    listing = ""

    def recorded() -> bool:
        # Two printenv jobs ran (one without GPUs): wait for the one with two, not for the first.
        return "hostname|COMPLETED" in listing and any(
            line.startswith("printenv|COMPLETED") and "gres/gpu=2" in line for line in listing.splitlines()
        )

    for _ in range(60):
        listing = rack.ssh("ctl", "sacct -a -X -n -P -o JobName,State,AllocTRES")
        if recorded():
            break
        time.sleep(1)
    assert recorded(), listing


def test_utilization_from_real_sacct_output(rack: Rack) -> None:
    jobs = [
        rack.ssh("ctl", f"sbatch --parsable --gres=gpu:{gpus} --wrap 'sleep {seconds}'").strip()
        for gpus, seconds in ((2, 6), (4, 3))
    ]
    query = (
        "sacct -a --allocations --parsable2 -o JobID,Partition,AllocTRES,Elapsed,Start,End,State "
        f"-j {','.join(jobs)}"
    )
    for _ in range(60):
        recorded = rack.ssh("ctl", query)
        if recorded.count("COMPLETED") == 2:
            break
        time.sleep(1)
    # Without --mem, each job got its GPUs' share of the node's memory (DefMemPerGPU), not the whole node.
    (group,) = [g for g in node_groups(load(rack.cluster_file).cluster) if g.gpu_count]
    share = group.real_memory_mib // group.gpu_count
    alloc = dict(line.split("|")[:3:2] for line in recorded.splitlines()[1:])
    assert [f"mem={gpus * share}M" in alloc[job] for job, gpus in zip(jobs, (2, 4), strict=True)] == [
        True
    ] * 2, alloc
    sample = ROOT / "build" / "sacct-testrack.txt"
    sample.parent.mkdir(exist_ok=True)
    sample.write_text(recorded)
    result = subprocess.run(
        [
            str(ROOT / ".venv/bin/gpucluster"),
            "utilization",
            str(rack.cluster_file),
            "--sacct",
            str(sample),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    debug = next(p for p in json.loads(result.stdout)["partitions"] if p["partition"] == "debug")
    # 2 GPUs for ~6 s and 4 GPUs for ~3 s: 24 GPU-seconds, plus up to 3 s of start-up per job.
    assert (2 * 6 + 4 * 3) / 3600 <= debug["allocated_gpu_hours"] <= (2 * 9 + 4 * 6) / 3600, recorded


def test_second_converge_changes_nothing(rack: Rack) -> None:
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    assert {host: c["changed"] for host, c in run.recap().items()} == dict.fromkeys(
        ["ctl", "n1", "n2", "n3"], 0
    )


def test_hand_made_drift_is_repaired_by_one_run_with_only_the_restarts_it_needs(rack: Rack) -> None:
    """n1's gres.conf edited by hand (its GPUs narrowed), slurmd unheld on n2, slurmd stopped on n3."""
    pristine = rack.ssh("ctl", "md5sum < /etc/slurm/gres.conf")
    rack.ssh("n1", r"sed -i 's/nvidia\[0-7\]/nvidia[0-3]/' /etc/slurm/gres.conf")
    assert rack.ssh("n1", "md5sum < /etc/slurm/gres.conf") != pristine
    rack.ssh("n2", "apt-mark unhold slurmd")
    rack.ssh("n3", "systemctl stop slurmd")
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    changed = {host: c["changed"] for host, c in run.recap().items()}
    assert changed["ctl"] == 0 and all(changed[n] > 0 for n in ("n1", "n2", "n3")), changed
    done = handlers_run(run.output)
    # slurmd reads gres.conf only when it starts: n1's slurmd restarts (drained first); nothing else does.
    assert done.get("Restart slurmd") == {"n1"}, done
    assert "Restart slurmctld" not in done and "Restart munge" not in done, done
    assert rack.ssh("n1", "md5sum < /etc/slurm/gres.conf") == pristine
    assert "slurmd" in rack.ssh("n2", "apt-mark showhold").split()
    assert rack.ssh("n3", "systemctl is-active slurmd", check=False).strip() == "active"
    wait_for(
        "every compute node idle again, none drained",
        lambda: {s for s, _ in slurm_nodes(rack, "n1", "n2", "n3").values()} == {"IDLE"},
    )
    assert rack.ssh("ctl", "srun -N3 hostname | sort").split() == ["n1", "n2", "n3"]
    again = converge(rack)
    assert again.rc == 0 and all(c["changed"] == 0 for c in again.recap().values()), again.output[-3000:]


def test_a_down_node_does_not_stop_the_rest(rack: Rack) -> None:
    rack.stop_node("n2")
    try:
        run = converge(rack)
        assert run.rc != 0
        recap = run.recap()
        assert recap["n2"]["unreachable"] > 0
        assert "UNREACHABLE" in run.output and "n2" in run.output
        assert all(recap[h]["failed"] == 0 and recap[h]["unreachable"] == 0 for h in ("ctl", "n1", "n3"))
    finally:
        rack.start_node("n2")
    # n2 missed nothing (no change came while it was down): the next test's converge, with n2 back, is
    # the run that shows it catches up.


def test_partition_change_keeps_running_jobs(rack: Rack) -> None:
    job = _running_job(rack, "-N1")
    cluster = yaml.safe_load(rack.cluster_file.read_text())
    cluster["slurm"]["partitions"].append(
        {"name": "short", "node_groups": ["rack-t"], "max_time": "01:00:00"}
    )
    rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    assert "Restart slurmd" not in run.output and "Restart slurmctld" not in run.output
    assert "PartitionName=short" in rack.ssh("ctl", "scontrol show partition short")
    assert "MaxTime=01:00:00" in rack.ssh("ctl", "scontrol show partition short")
    assert _squeue_state(rack, job) == "RUNNING"
    rack.ssh("ctl", f"scancel {job}")


def test_a_rack_added_to_a_busy_cluster_converges_in_one_limited_run_and_awaits_acceptance(
    rack: Rack,
) -> None:
    """Slurm 22.05 needs slurmctld restarted for a new node; nothing on the other nodes restarts."""
    job = _running_job(rack, "-N1 -w n1")
    base = rack.cluster_file.read_text()
    cluster = yaml.safe_load(base)
    spare = rack.node(4)
    cluster["onprem"]["racks"].append(
        {"name": "rack-t2", "profile": "testnode", "nodes": [{"name": spare.name, "address": spare.address}]}
    )
    cluster["slurm"]["partitions"][0]["node_groups"].append("rack-t2")
    head = yaml.safe_dump(cluster, sort_keys=False)
    review = {f.kind: set(f.hosts) for f in predicted(rack.cluster_file, base, head)}
    rack.cluster_file.write_text(head)
    limit = ("--limit", f"ctl,{names.rack_group('rack-t2')}")
    run = converge(rack, *limit)
    assert run.rc == 0, run.output[-3000:]
    assert set(run.recap()) == {"ctl", "n4"}
    done = handlers_run(run.output)
    # The review's prediction, and the converge doing exactly that: one slurmctld restart on the
    # controller, `scontrol reconfigure`, and no slurmd restart (drained or not) on any node.
    assert review["slurmctld-restart"] == {"ctl"} and "slurmd-restart" not in review, review
    assert done.get("Restart slurmctld") == {"ctl"}, done
    assert "reconfigure" in review and "Tell slurmctld and every slurmd to re-read the configuration" in done
    assert "Restart slurmd" not in done and "Drain the node before restarting slurmd" not in done, done
    assert _squeue_state(rack, job) == "RUNNING"
    assert rack.ssh("ctl", "sinfo -h -n n1 -o %T").strip() in {"mixed", "allocated"}
    # The nodes outside --limit know the new one: the controller wrote their hosts block and slurm.conf.
    for node in ("n1", "n2", "n3"):
        assert spare.address in rack.ssh(node, "grep -w n4 /etc/hosts", check=False), node
        assert rack.ssh(node, "md5sum < /etc/slurm/slurm.conf") == rack.ssh(
            "ctl", "md5sum < /etc/slurm/slurm.conf"
        )
    wait_for("n4 registers", lambda: slurm_nodes(rack, "n4")["n4"][0] == "IDLE+DRAIN")
    assert slurm_nodes(rack, "n4")["n4"] == ("IDLE+DRAIN", AWAITING_REASON)
    again = converge(rack, *limit)
    assert again.rc == 0 and all(c["changed"] == 0 for c in again.recap().values()), again.output[-3000:]
    assert _squeue_state(rack, job) == "RUNNING"
    rack.ssh("ctl", f"scancel {job}")


def test_acceptance_fails_the_new_rack_skips_busy_nodes_and_keeps_an_operators_drain(rack: Rack) -> None:
    """n4 (no GPUs) fails every hardware check; n1 runs a job; n3 was drained for a bad DIMM and passes."""
    job = _running_job(rack, "-N1 -w n1")
    rack.ssh("ctl", "scontrol update nodename=n3 state=DRAIN reason='bad DIMM B2'")
    hosts = _accept(rack, [2, 3])
    assert hosts["n1"]["skipped"] == f"runs job(s) {job}; not probed"
    assert _squeue_state(rack, job) == "RUNNING"
    assert (hosts["n2"]["passed"], hosts["n2"]["admission"]) == (True, "passed: already in service")
    assert hosts["n3"]["passed"] is True
    assert slurm_nodes(rack, "n3")["n3"] == ("IDLE+DRAIN", "bad DIMM B2")
    assert hosts["n4"]["passed"] is False
    name = yaml.safe_load(rack.cluster_file.read_text())["name"]
    reports = ROOT / "build" / "accept" / name
    report = json.loads((reports / "n4.json").read_text())
    checks = {c["name"]: c for c in report["checks"]}
    hardware = (
        "gpu_count",
        "gpu_model",
        "gpu_memory",
        "driver_version",
        "ecc_errors",
        "persistence_mode",
        "dcgm_diag",
        "nccl_single_node",
    )
    assert all(checks[name]["status"] == "fail" for name in hardware), {
        n: checks[n]["status"] for n in hardware
    }
    assert "expected 8 × NVIDIA H100 80GB HBM3, found 0 GPUs" in checks["gpu_count"]["message"]
    state, reason = slurm_nodes(rack, "n4")["n4"]
    assert state == "IDLE+DRAIN" and reason.startswith("gpucluster accept: gpu_count: expected 8 x"), reason
    summary = (reports / "summary.md").read_text()
    assert f"| n1 | skipped: runs job(s) {job}; not probed |" in summary
    assert "| n3 | yes (operator's drain kept) |" in summary
    rack.ssh("ctl", f"scancel {job}")


# Per-job node health (docs/health.md), turned on for this rack only: the healthy probes answer on n1-n3,
# then one tool at a time is made to report a fault. n3 is still drained by the operator (bad DIMM) and n4
# by acceptance from the tests above.
HEALTH_LOG = "/var/log/gpucluster/health.jsonl"
XID_61 = "NVRM: Xid (PCI:0000:2a:00): 61, pid=4242, name=python, Internal micro-controller breakpoint/warning"


def _health_passes(rack: Rack, node: str) -> list[dict[str, object]]:
    text = rack.ssh(node, f"cat {HEALTH_LOG} 2>/dev/null || true")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _fake_tool(rack: Rack, index: int, path: str, body: str) -> None:
    tool = rack.node(index).root / path
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(0o755)


def _job_state(rack: Rack, job: str) -> str:
    return rack.ssh("ctl", f"sacct -j {job} -X -n -P -o State,NodeList | tail -1", check=False).strip()


def test_health_checks_turned_on_reach_every_node_and_a_healthy_job_passes_them(rack: Rack) -> None:
    for index in (1, 2, 3):
        healthy_probes.install(rack.node(index))
    data = yaml.safe_load(rack.cluster_file.read_text())
    # tool_limit_s: a hung tool costs 3 s; the clock: chrony cannot set it in nspawn (rack_cluster.py);
    # memory: the nodes see this machine's memory, shared with the other racks of a CI run.
    data["health"] = {
        "enabled": True,
        "tool_limit_s": 3,
        "interval_s": 60,
        "min_available_memory_fraction": 0.05,
        "skip": ["clock"],
    }
    rack.cluster_file.write_text(yaml.safe_dump(data))
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    config = rack.ssh("ctl", "scontrol show config")
    assert re.search(rf"^HealthCheckProgram\s+= {names.HEALTH_PROGRAM}$", config, re.M), config
    assert re.search(r"^SchedulerParameters\s+= nohold_on_prolog_fail$", config, re.M)
    timeout = rack.ssh("ctl", "sed -n 's/^PrologEpilogTimeout=//p' /etc/slurm/slurm.conf").strip()
    assert re.search(rf"^PrologEpilogTimeout\s+= {timeout}( sec)?$", config, re.M), timeout
    job = rack.ssh("ctl", "sbatch --parsable -w n1 --wrap true").strip()
    wait_for(
        "the job's prolog and epilog passes",
        lambda: len([p for p in _health_passes(rack, "n1") if p["job"] == job]) == 2,
    )
    passes = [p for p in _health_passes(rack, "n1") if p["job"] == job]
    assert [(p["when"], p["failures"], p["checks"]) for p in passes] == [
        ("prolog", [], ["gpus", "ecc", "xid", "memory"]),
        ("epilog", [], ["gpus", "ecc", "xid"]),
    ]
    wait_for("the job completes", lambda: _job_state(rack, job) == "COMPLETED|n1")


def test_an_xid_drains_a_rack_node_with_its_reason_and_the_job_runs_on_another(rack: Rack) -> None:
    """Xid 61 (a reboot does not clear it): n1 drained by its prolog pass, the job requeued, not held."""
    _fake_tool(rack, 1, "usr/local/bin/journalctl", f'echo "{XID_61}"\n')
    job = rack.ssh("ctl", "sbatch --parsable -N1 --wrap true").strip()
    expected = f"{names.HEALTH_REASON}XID_61: Xid 61 on GPU 0000:2a:00"
    wait_for(
        "n1 drained by its check",
        lambda: slurm_nodes(rack, "n1")["n1"][1] == expected,
        60,
        lambda: slurm_nodes(rack, "n1"),
    )
    # slurmctld keeps the program's reason (its own would be "Prolog error") and requeues the job unheld;
    # a requeued job waits out the credential lifetime (120 s) before it starts again.
    wait_for(
        "the job completes on n2",
        lambda: _job_state(rack, job) == "COMPLETED|n2",
        300,
        lambda: _job_state(rack, job),
    )
    assert "DRAIN" in slurm_nodes(rack, "n1")["n1"][0]
    met = [p for p in _health_passes(rack, "n1") if p["job"] == job]
    # The Epilog still runs on n1 when the job leaves it: the node is drained for this reason already.
    assert [(p["when"], p["action"]["kind"]) for p in met] == [("prolog", "drain"), ("epilog", "none")], met  # type: ignore[index]
    assert "a reboot does not clear this" in str(met[0]["action"])


def test_gpucluster_health_lists_each_nodes_last_pass_and_who_drained_it(rack: Rack, tmp_path: Path) -> None:
    wait_for(
        "a periodic pass on idle n2",
        lambda: "Comment=gpucluster-health periodic" in rack.ssh("ctl", "scontrol show node -o n2"),
        150,
    )
    saved = tmp_path / "nodes.txt"
    saved.write_text(rack.ssh("ctl", "scontrol show node -o"))
    done = subprocess.run(
        [str(ROOT / ".venv/bin/gpucluster"), "health", "--from", str(saved), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {n["node"]: n for n in json.loads(done.stdout)}
    assert (listed["n1"]["drained_by"], listed["n1"]["reason"]) == (
        "health",
        f"{names.HEALTH_REASON}XID_61: Xid 61 on GPU 0000:2a:00",
    )
    assert re.fullmatch(r"(prolog|epilog|periodic) \S+Z XID_61( drain)?", listed["n1"]["last_pass"]), listed[
        "n1"
    ]
    assert re.fullmatch(r"periodic \S+Z ok", listed["n2"]["last_pass"]), listed["n2"]
    assert (listed["n3"]["drained_by"], listed["n3"]["reason"]) == ("operator", "bad DIMM B2")


def _without_first_gpu(xml: str) -> str:
    """nvidia-smi -q -x with its first GPU gone, as after a GPU fell off the bus."""
    out = re.sub(r"<gpu id=.*?</gpu>\s*", "", xml, count=1, flags=re.S)
    count = int(re.search(r"<attached_gpus>(\d+)</attached_gpus>", xml).group(1))  # type: ignore[union-attr]
    return out.replace(f"<attached_gpus>{count}<", f"<attached_gpus>{count - 1}<")


def test_a_lost_gpu_reboots_its_node_once_and_a_hung_tool_is_cut_off_at_its_limit(rack: Rack) -> None:
    """n2 loses a GPU: one reboot through Slurm, then drained; n3's journalctl hangs: drained in 3 s."""
    rack.ssh("ctl", "scontrol update nodename=n3 state=RESUME")  # the operator swapped the DIMM
    sample = rack.node(2).root / healthy_probes.SHARE / "nvidia-smi-q-x.xml"
    sample.write_text(_without_first_gpu(sample.read_text()))
    _fake_tool(rack, 3, "usr/local/bin/journalctl", "exec sleep 600\n")
    submitted = time.monotonic()
    job = rack.ssh("ctl", "sbatch --parsable -N2 -w n2,n3 --wrap true").strip()
    hung = f"{names.HEALTH_REASON}TOOL_HUNG: journalctl -k gave no answer within 3 s"
    wait_for(
        "n3 drained for its hung tool",
        lambda: slurm_nodes(rack, "n3")["n3"][1] == hung,
        60,
        lambda: slurm_nodes(rack, "n3"),
    )
    lost = f"{names.HEALTH_REASON}GPU_MISSING: 7 of 8 GPUs listed"
    # The prolog asks for a reboot (reason "… (rebooting once)"); after it the GPU is still gone and the next
    # pass drains the node instead of rebooting it again.
    wait_for(
        "n2 drained after one reboot",
        lambda: slurm_nodes(rack, "n2")["n2"][1] == lost,
        300,
        lambda: slurm_nodes(rack, "n2"),
    )
    rack.ssh("ctl", f"scancel {job}")
    # Each boot of a rack node starts its own clock (gpucluster_rack/node.py): n2 booted after the job came.
    assert float(rack.ssh("n2", "cut -d' ' -f1 /proc/uptime")) < time.monotonic() - submitted
    kinds = [(p["when"], p["action"]["kind"]) for p in _health_passes(rack, "n2") if p["failures"]]  # type: ignore[index]
    assert kinds[0] == ("prolog", "reboot") and kinds.count(("prolog", "reboot")) == 1, kinds
    drained = [p for p in _health_passes(rack, "n2") if p["action"]["kind"] == "drain"]  # type: ignore[index]
    assert drained and "already rebooted for GPU_MISSING" in str(drained[0]["action"]), drained
    n3 = [p for p in _health_passes(rack, "n3") if p["job"] == job]
    assert n3 and n3[0]["seconds"] < 3 + 5, n3  # the hung journalctl cost its limit, not slurmd's timeout
    # Every pass that met the hung journalctl killed it: none is left once no pass can be within its 3 s.
    (rack.node(3).root / "usr/local/bin/journalctl").unlink()
    time.sleep(4)
    assert rack.ssh("n3", "pgrep -fx 'sleep 600' || true") == ""


def test_repaired_nodes_return_to_service(rack: Rack) -> None:
    for index in (1, 2, 3):
        healthy_probes.remove(rack.node(index))
        healthy_probes.install(rack.node(index))
        (rack.node(index).root / "usr/local/bin/journalctl").unlink(missing_ok=True)
    rack.ssh("ctl", "scontrol update nodename=n[1-3] state=RESUME", check=False)
    wait_for(
        "n1-n3 idle", lambda: all(s == "IDLE" for s, _ in slurm_nodes(rack, "n1", "n2", "n3").values()), 60
    )
    job = rack.ssh("ctl", "sbatch --parsable -N3 -w n[1-3] --wrap true").strip()
    wait_for("a job on the repaired nodes", lambda: _job_state(rack, job).startswith("COMPLETED|"), 60)
