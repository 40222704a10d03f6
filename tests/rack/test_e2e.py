"""End to end on real daemons: converge a 4-node rack with ansible/site.yml and use Slurm on it.

The tests run in file order and share one rack; each step builds on the previous one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

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
