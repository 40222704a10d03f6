"""End to end on real daemons: converge a 4-node rack with ansible/site.yml and use Slurm on it.

The tests run in file order and share one rack; each step builds on the previous one.
"""

from __future__ import annotations

import time

import yaml

from tests.rack.conftest import converge
from tests.rack.rack import Rack


def _squeue_state(rack: Rack, job: str) -> str:
    return rack.ssh("ctl", f"squeue -h -j {job} -o %T", check=False).strip()


def test_first_converge_succeeds(rack: Rack) -> None:
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    assert set(run.recap()) == {"ctl", "n1", "n2", "n3"}
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in run.recap().values())


def test_sinfo_shows_three_idle_compute_nodes(rack: Rack) -> None:
    deadline = time.monotonic() + 60
    while rack.ssh("ctl", "sinfo -h -t idle -o %D").strip() != "3" and time.monotonic() < deadline:
        time.sleep(1)
    assert rack.ssh("ctl", "sinfo -h -t idle -o %D").strip() == "3", rack.ssh("ctl", "sinfo -R; sinfo")


def test_srun_runs_on_three_distinct_nodes(rack: Rack) -> None:
    names = rack.ssh("ctl", "srun -N3 hostname").split()
    assert sorted(names) == ["n1", "n2", "n3"]


def test_gres_allocates_two_declared_gpus(rack: Rack) -> None:
    assert rack.ssh("ctl", "srun --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES").strip() == "0,1"
    refused = rack.ssh("ctl", "srun --immediate=5 --gres=gpu:9 true 2>&1", check=False)
    assert "Requested node configuration is not available" in refused


def test_sacct_lists_the_jobs_from_slurmdbd(rack: Rack) -> None:
    listing = ""
    for _ in range(30):
        listing = rack.ssh("ctl", "sacct -a -X -n -P -o JobName,State,AllocTRES")
        if "printenv|COMPLETED" in listing:
            break
        time.sleep(1)
    assert "hostname|COMPLETED" in listing
    assert any(
        line.startswith("printenv|COMPLETED") and "gres/gpu=2" in line for line in listing.splitlines()
    )


def test_second_converge_changes_nothing(rack: Rack) -> None:
    run = converge(rack)
    assert run.rc == 0, run.output[-3000:]
    assert {host: c["changed"] for host, c in run.recap().items()} == dict.fromkeys(
        ["ctl", "n1", "n2", "n3"], 0
    )


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
    again = converge(rack)
    assert again.rc == 0, again.output[-3000:]


def test_partition_change_keeps_running_jobs(rack: Rack) -> None:
    job = rack.ssh("ctl", "sbatch --parsable -N1 --wrap 'sleep 60'").strip()
    deadline = time.monotonic() + 30
    while _squeue_state(rack, job) != "RUNNING" and time.monotonic() < deadline:
        time.sleep(1)
    assert _squeue_state(rack, job) == "RUNNING"
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
