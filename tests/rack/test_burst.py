"""Burst end to end: the rack's slurmctld powers emulated cloud nodes up and down, and they run jobs.

Rack "c" (gpucluster_rack/burst_rack.py): a controller and a rack node converged from a hybrid cluster file
against an emulated AWS, cloud instances booted as nspawn nodes from the image the image playbook built.
The tests run in file order on one rack. Each leaves no instance behind for the next where the next needs
a cold start (counts of launched instances, capacity errors); the spot tests and the last test take
whatever idle cloud node is up, which saves a boot and a power-down cycle each.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator

import pytest

from gpucluster.names import NODE_TAG, PROMETHEUS_CLOUD_TARGETS
from gpucluster_rack import emulated_aws
from gpucluster_rack.burst_rack import (
    BUCKET,
    CHECKPOINT_INTERVAL_S,
    GROUPS,
    IDLE_S,
    MIXED,
    RACK,
    ROUTING_CAP,
    USER,
    Burst,
    burst_rack,
    checkpoint_record,
    complete_checkpoints,
    put_train_script,
)
from tests.rack.conftest import require_rack_prerequisites
from tests.spot.test_reference_job import uninterrupted_value


@pytest.fixture(scope="module")
def burst() -> Iterator[Burst]:
    """Rack "c", converged, with its emulated account and instance runner."""
    require_rack_prerequisites()
    with burst_rack(RACK) as booted:
        yield booted


# ---------------------------------------------------------------------------------------------- helpers


def _ctl(burst: Burst, command: str, *, check: bool = True) -> str:
    return burst.rack.ssh("ctl", command, check=check, timeout=600)


def _as_user(burst: Burst, command: str) -> str:
    return _ctl(burst, f"su - {USER} -c {json.dumps(command)}")


def _live_instances(burst: Burst) -> dict[str, str]:
    """Instance id → node tag of every pending or running instance of the cluster."""
    found = {}
    answer = burst.ec2.describe_instances(
        Filters=[
            {"Name": "tag:gpucluster:cluster", "Values": ["testrackc"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )
    for reservation in answer["Reservations"]:
        for instance in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            found[instance["InstanceId"]] = tags.get("gpucluster:node", "")
    return found


def _instance_types(burst: Burst) -> dict[str, str]:
    """Node tag → instance type of every pending or running instance of the cluster."""
    answer = burst.ec2.describe_instances(
        Filters=[
            {"Name": "tag:gpucluster:cluster", "Values": ["testrackc"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )
    return {
        tags.get("gpucluster:node", ""): instance["InstanceType"]
        for reservation in answer["Reservations"]
        for instance in reservation["Instances"]
        for tags in [{t["Key"]: t["Value"] for t in instance.get("Tags", [])}]
    }


def _node_states(burst: Burst) -> dict[str, str]:
    rows = _ctl(burst, "sinfo -N -h -o '%N %t'").split()
    return dict(zip(rows[::2], rows[1::2], strict=True))


def _wait(what: str, check: Callable[[], bool], timeout_s: float, burst: Burst) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"not within {timeout_s:.0f} s: {what}\nnodes: {_node_states(burst)}\n"
                f"instances: {_live_instances(burst)}\nrunner errors: {burst.runner.errors}\n"
                + _ctl(burst, "tail -n 40 /var/log/slurm/slurmctld.log", check=False)
            )
        time.sleep(2)


def _job(burst: Burst, job: str) -> dict[str, str]:
    text = _ctl(burst, f"scontrol show job -o {job}", check=False)
    return dict(re.findall(r"(\w+)=(\S*)", text))


def _job_history(burst: Burst, job: str) -> str:
    """What slurmctld and the power programs logged about a job and the spot nodes (for a failed check)."""
    return "\n".join(
        [
            str(_job(burst, job)),
            _ctl(
                burst,
                f"grep -E 'JobId={job}[^0-9]|p5-spot' /var/log/slurm/slurmctld.log | tail -n 80",
                check=False,
            ),
            _ctl(burst, "tail -n 60 /var/lib/gpucluster/power/power.log", check=False),
        ]
    )


def _all_powered_down(burst: Burst) -> bool:
    states = _node_states(burst)
    cloud = {n: s for n, s in states.items() if n.startswith("p5-")}
    return not _live_instances(burst) and all(s == "idle~" for s in cloud.values())


# ------------------------------------------------------------------------------------------------ tests


def test_the_rack_converges_and_a_second_run_changes_nothing(burst: Burst) -> None:
    assert burst.first.rc == 0, burst.first.output[-6000:]
    assert burst.second is not None
    assert burst.second.rc == 0, burst.second.output[-6000:]
    changed = {host: counts["changed"] for host, counts in burst.second.recap().items()}
    assert changed == {"ctl": 0, "n1": 0}, burst.second.output[-6000:]


def test_slurmctld_runs_the_power_configuration_and_shows_cloud_nodes_powered_down(burst: Burst) -> None:
    config = _ctl(burst, "scontrol show config")
    assert re.search(r"ResumeProgram\s+= /opt/gpucluster/bin/gpucluster-resume", config), config
    assert re.search(r"SuspendProgram\s+= /opt/gpucluster/bin/gpucluster-suspend", config)
    assert re.search(r"ResumeFailProgram\s+= /opt/gpucluster/bin/gpucluster-suspend", config)
    assert re.search(r"SuspendExcNodes\s+= n1", config)
    power = _ctl(burst, "scontrol show partition power-p5-spot")
    assert "SuspendTime=60" in power and "ResumeTimeout=240" in power and "State=INACTIVE" in power
    states = _node_states(burst)
    assert {n: s for n, s in states.items() if n.startswith("p5-")} == {
        **{f"{g}-{i}": "idle~" for g in GROUPS for i in (1, 2)},
        f"{MIXED}-1": "idle~",
        f"{MIXED}-h200-1": "idle~",
    }
    # n1 is in service: idle and answering (a ping lost on a loaded machine shows "idle*" for a moment).
    _wait("n1 is idle and answers slurmctld", lambda: _node_states(burst)["n1"] == "idle", 120, burst)
    assert _live_instances(burst) == {}


def test_the_munge_key_reached_ssm_and_the_reconciler_runs(burst: Burst) -> None:
    ssm = emulated_aws.client(RACK, "ssm")
    stored = ssm.get_parameter(Name="/gpucluster/testrackc/munge-key", WithDecryption=True)["Parameter"]
    key = _ctl(burst, "base64 -w0 /etc/munge/munge.key")
    assert stored["Type"] == "SecureString" and stored["Value"] == key
    assert _ctl(burst, "systemctl is-active gpucluster-reconcile.timer").strip() == "active"
    show = "systemctl show -p Result -p ExecMainStatus -p ExecMainExitTimestampMonotonic gpucluster-reconcile"
    _wait(
        "the reconciler ran", lambda: "ExecMainExitTimestampMonotonic=0" not in _ctl(burst, show), 60, burst
    )
    assert "Result=success" in _ctl(burst, show) and "ExecMainStatus=0" in _ctl(burst, show), _ctl(
        burst, "journalctl -u gpucluster-reconcile --no-pager | tail -n 30"
    )


def test_a_user_job_bursts_to_two_cloud_nodes_which_power_down_when_idle(burst: Burst) -> None:
    job = _as_user(
        burst, "sbatch --parsable -p cloud -N2 -o /tmp/burst-%j.out --wrap 'srun hostname'"
    ).strip()
    _wait("the job completed", lambda: _job(burst, job).get("JobState") == "COMPLETED", 240, burst)
    record = _job(burst, job)
    assert record["NodeList"] == "p5-spot-[1-2]" and record["ExitCode"] == "0:0", record
    assert record["UserId"].startswith(f"{USER}(2001)")
    assert sorted(_live_instances(burst).values()) == ["p5-spot-1", "p5-spot-2"]
    # The reconciler made each running cloud node a Prometheus target at its instance's address.
    addresses = _instance_addresses(burst)
    _wait(
        "both cloud nodes are Prometheus targets",
        lambda: _prometheus_targets(burst) == {n: addresses[n] for n in ("p5-spot-1", "p5-spot-2")},
        60,
        burst,
    )
    _wait(
        "idle cloud nodes powered down, no instance left",
        lambda: _all_powered_down(burst),
        IDLE_S + 180,
        burst,
    )
    _wait("no Prometheus target is left", lambda: _prometheus_targets(burst) == {}, 60, burst)


def _instance_addresses(burst: Burst) -> dict[str, str]:
    """The private address of each live instance's node."""
    found = {}
    for reservation in burst.ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            if instance["State"]["Name"] in ("pending", "running") and tags.get(NODE_TAG):
                found[tags[NODE_TAG]] = instance.get("PrivateIpAddress", "")
    return found


def _prometheus_targets(burst: Burst) -> dict[str, str]:
    """node → address of the file_sd files on ctl, checked for the labels prometheus.yml relies on."""
    listing = _ctl(burst, f"cat {PROMETHEUS_CLOUD_TARGETS}/*.json 2>/dev/null || true")
    found = {}
    for line in listing.splitlines():
        (entry,) = json.loads(line)
        assert entry["labels"]["site"] == "cloud" and entry["labels"]["node_group"] == "p5-spot", entry
        found[entry["labels"]["node"]] = entry["targets"][0]
    return found


def test_a_mixed_group_launches_the_gpu_model_a_job_asks_for_within_one_cap(burst: Burst) -> None:
    # p5-mix may launch p5.48xlarge (H100) as p5-mix-1 or p5e.48xlarge (H200) as p5-mix-h200-1, one at a time.
    job = _as_user(
        burst, "sbatch --parsable -p mixed --gres=gpu:h200:1 --wrap 'srun hostname; sleep 45'"
    ).strip()
    _wait("the H200 job runs", lambda: _job(burst, job).get("JobState") == "RUNNING", 240, burst)
    assert _job(burst, job)["NodeList"] == f"{MIXED}-h200-1"
    assert _instance_types(burst) == {f"{MIXED}-h200-1": "p5e.48xlarge"}
    node = _ctl(burst, f"scontrol show node {MIXED}-h200-1")
    assert "Gres=gpu:h200:8" in node and f"AvailableFeatures=aws,{MIXED},h200" in node, node
    # An H100 job meanwhile: its name would be the group's second instance, so the ResumeProgram refuses it.
    h100 = _as_user(burst, "sbatch --parsable -p mixed --gres=gpu:h100:1 --wrap hostname").strip()
    _wait(
        f"{MIXED}-1 is DOWN at the group's max_count",
        lambda: "group at max_count 1" in _ctl(burst, "sinfo -R -N -h -o '%N|%E'"),
        120,
        burst,
    )
    assert _instance_types(burst) == {f"{MIXED}-h200-1": "p5e.48xlarge"}
    _ctl(burst, f"scancel {h100}")
    _wait("the H200 job completed", lambda: _job(burst, job).get("JobState") == "COMPLETED", 120, burst)
    # The refused name returns after the unavailable window (2 minutes here), the H200 node when idle.
    _wait("everything powered down", lambda: _all_powered_down(burst), IDLE_S + 300, burst)


def _instance_node(burst: Burst, slurm_name: str) -> str:
    """The rack address of the instance that runs a Slurm node."""
    for instance_id, name in _live_instances(burst).items():
        if name == slurm_name and instance_id in burst.runner.running:
            return burst.runner.node_of(instance_id).address
    raise AssertionError(f"no booted instance runs {slurm_name}: {_live_instances(burst)}")


def test_rack_first_and_burst_only_when_the_rack_is_full(burst: Burst) -> None:
    rack_job = _as_user(burst, "sbatch --parsable -p debug,cloud -N1 --wrap 'hostname'").strip()
    _wait("the job completed", lambda: _job(burst, rack_job).get("JobState") == "COMPLETED", 60, burst)
    assert _job(burst, rack_job)["NodeList"] == "n1" and _live_instances(burst) == {}
    filler = _as_user(burst, "sbatch --parsable -p debug --exclusive -N1 --wrap 'sleep 600'").strip()
    _wait("n1 is full", lambda: _job(burst, filler).get("JobState") == "RUNNING", 60, burst)
    burst_job = _as_user(burst, "sbatch --parsable -p debug,cloud -N1 --wrap 'hostname'").strip()
    _wait("an instance boots", lambda: bool(_live_instances(burst)), 60, burst)
    # slurmctld restarts while the node boots: nothing is lost, nothing leaks.
    _ctl(burst, "systemctl restart slurmctld")
    _wait(
        "the burst job completed", lambda: _job(burst, burst_job).get("JobState") == "COMPLETED", 240, burst
    )
    assert _job(burst, burst_job)["NodeList"].startswith("p5-spot-")
    _ctl(burst, f"scancel {filler}")
    _wait("powered down, no instance left", lambda: _all_powered_down(burst), IDLE_S + 180, burst)


# ----------------------------------------------------------------------------------- hybrid routing
# The rack's cluster file routes by comment tag (burst_rack.py): training → debug only, experiment → debug
# and, after a minute's expected wait, debug,od (at most ROUTING_CAP cloud node), eval → spot.


POWER_BIN = "/opt/gpucluster/bin"


def _routing_log(burst: Burst, job: str) -> list[str]:
    """The burst controller's decision lines about one job (its journal, every pass so far)."""
    text = _ctl(burst, "journalctl -u gpucluster-routing --no-pager -o cat", check=False)
    return [line for line in text.splitlines() if line.startswith(f"job {job} ")]


def _routed(burst: Burst, tag: str, *options: str, wrap: str) -> str:
    command = f"sbatch --parsable --comment=class={tag} {' '.join(options)} --wrap '{wrap}'"
    return _as_user(burst, command).strip()


def _admin_comment(burst: Burst, job: str) -> str:
    # job_submit.lua's comment holds `key=value` words itself; it ends with asked=<partition>.
    match = re.search(r"AdminComment=(.*? asked=\S+)", _ctl(burst, f"scontrol show job -o {job}"))
    return match.group(1) if match else ""


def _explain(burst: Burst, job: str) -> str:
    """`gpucluster routing explain` on the controller, from the routing.json the burst controller reads."""
    return _ctl(burst, f"{POWER_BIN}/gpucluster routing explain {job} --config /etc/gpucluster/routing.json")


def _experiments_in_the_cloud(burst: Burst, jobs: list[str]) -> int:
    """Experiment jobs that hold a cloud node: running in od, or pending and already widened to it."""
    rows = _ctl(burst, f"squeue -h -j {','.join(jobs)} -o '%i %T %P'", check=False).splitlines()
    return sum(1 for row in rows if "od" in row.split()[2].split(","))


def test_routing_an_experiment_stays_on_the_rack_that_frees_up_within_its_threshold(burst: Burst) -> None:
    assert _ctl(burst, "systemctl is-active gpucluster-routing.timer").strip() == "active"
    train = _routed(burst, "training", "-N1 --exclusive --time=1", wrap="sleep 30")
    _wait("the training job holds n1", lambda: _job(burst, train).get("JobState") == "RUNNING", 60, burst)
    experiment = _routed(burst, "experiment", "-p od -N1", wrap="hostname")
    assert "class=experiment route=rack_then_cloud first=debug by=comment asked=od" in _admin_comment(
        burst, experiment
    )
    assert _job(burst, experiment)["Partition"] == "debug"
    _wait(
        "the experiment completed", lambda: _job(burst, experiment).get("JobState") == "COMPLETED", 120, burst
    )
    assert _job(burst, experiment)["NodeList"] == "n1" and _live_instances(burst) == {}
    lines = _routing_log(burst, experiment)
    assert lines and all(": wait: " in line for line in lines), lines


def test_routing_bursts_an_experiment_sends_an_eval_to_spot_and_never_bursts_training(burst: Burst) -> None:
    train = _routed(burst, "training", "-N1 --exclusive --time=10", wrap="sleep 600")
    _wait("the training job holds n1", lambda: _job(burst, train).get("JobState") == "RUNNING", 60, burst)
    # A training job that asks for on-demand cloud nodes is sent to the rack, and waits there.
    queued = _routed(burst, "training", "-p od -N1", wrap="hostname")
    evaluation = _routed(burst, "eval", "-p debug -N1", wrap="hostname")
    experiment = _routed(burst, "experiment", "-N1", wrap="hostname")
    # 20 more experiments at once, while the rack stays busy: never more than the cap in the cloud. They age
    # with the first (oldest first, it takes the one cloud node), then take turns on the node it booted.
    burst_jobs = [_routed(burst, "experiment", "-N1", wrap="sleep 5") for _ in range(20)]
    assert _job(burst, queued)["Partition"] == "debug" and _job(burst, evaluation)["Partition"] == "spot"
    most = 0

    def within_the_cap() -> None:
        nonlocal most
        most = max(most, _experiments_in_the_cloud(burst, [experiment, *burst_jobs]))
        on_demand = [node for node in _live_instances(burst).values() if node.startswith("p5-od-")]
        assert len(on_demand) <= ROUTING_CAP, on_demand

    def completed(job: str) -> bool:
        within_the_cap()
        return _job(burst, job).get("JobState") == "COMPLETED"

    for job in (evaluation, experiment):
        _wait(f"job {job} completed", lambda job=job: completed(job), 300, burst)
    assert _job(burst, evaluation)["NodeList"].startswith("p5-spot-")
    assert _job(burst, experiment)["NodeList"].startswith("p5-od-")
    lines = _routing_log(burst, experiment)
    widened = [i for i, line in enumerate(lines) if ": widen: " in line]
    assert len(widened) == 1 and lines[widened[0]].endswith("partition debug,od"), lines
    # It burst only past the one-minute threshold: the scheduler's plan put its rack start later than that
    # (n1 is held for 10 minutes), or, with no plan yet, it waited the threshold out pass by pass.
    planned = re.search(r"expected wait (?:(\d+)h)?(\d+)m", lines[widened[0]])
    waited = [line for line in lines[: widened[0]] if ": cap: " not in line]
    assert (planned and int(planned.group(1) or 0) * 60 + int(planned.group(2)) > 1) or (
        waited and all(": wait: no rack start planned yet" in line for line in waited)
    ), lines
    assert _job(burst, queued)["JobState"] == "PENDING" and _job(burst, queued)["Partition"] == "debug"
    assert _routing_log(burst, queued) == []
    # Its user cannot move it past the policy; the partition stays the class's.
    moved = _ctl(
        burst,
        f"su - {USER} -c 'scontrol update jobid={queued} partition=debug,od' 2>&1; echo rc=$?",
        check=False,
    )
    assert "rc=0" not in moved and _job(burst, queued)["Partition"] == "debug", moved
    explained = _explain(burst, queued)
    assert "class training: its comment names class=training" in explained, explained
    assert "route rack: job_submit.lua sends it to debug" in explained, explained

    def two_done() -> bool:
        within_the_cap()
        return sum(_job(burst, job).get("JobState") == "COMPLETED" for job in burst_jobs) >= 2

    _wait("two of the burst's experiments completed in the cloud", two_done, 240, burst)
    assert most == ROUTING_CAP
    capped = [line for job in burst_jobs for line in _routing_log(burst, job) if ": cap: " in line]
    assert capped and f"of {ROUTING_CAP} cloud nodes" in capped[0], capped
    pending = next(j for j in burst_jobs if _job(burst, j).get("JobState") == "PENDING")
    explained = _explain(burst, pending)
    assert "class experiment: its comment names class=experiment" in explained, explained
    assert "route rack_then_cloud" in explained, explained
    _ctl(burst, f"scancel -u {USER}")
    # Idle cloud nodes power down: the routing adds no idle setting of its own.
    _wait("idle cloud nodes powered down", lambda: _all_powered_down(burst), IDLE_S + 180, burst)


def test_no_spot_capacity_downs_the_spot_nodes_with_the_code_and_the_job_runs_on_demand(burst: Burst) -> None:
    spot_template = json.loads(
        emulated_aws.client(RACK, "ssm").get_parameter(Name="/gpucluster/testrackc/capacity")["Parameter"][
            "Value"
        ]
    )["groups"]["p5-spot"]["launch_template_id"]
    burst.injector.fail_launches(
        spot_template,
        "InsufficientInstanceCapacity",
        "We currently do not have sufficient p5.48xlarge capacity",
    )
    try:
        job = _as_user(burst, "sbatch --parsable -p cloud -N2 --wrap 'srun hostname'").strip()
        _wait(
            "the spot nodes are DOWN with EC2's code",
            lambda: "InsufficientInstanceCapacity" in _ctl(burst, "sinfo -R -N -h -o '%N|%E'"),
            120,
            burst,
        )
        reasons = _ctl(burst, "sinfo -R -N -h -o '%N|%E'")
        assert {line.split("|")[0] for line in reasons.splitlines()} == {"p5-spot-1", "p5-spot-2"}, reasons
        # Requeued (after the credential lifetime, 30 s here) onto the on-demand group.
        _wait(
            "the job completed on demand", lambda: _job(burst, job).get("JobState") == "COMPLETED", 420, burst
        )
        assert _job(burst, job)["NodeList"] == "p5-od-[1-2]"
    finally:
        burst.injector.heal()
    # After the unavailable window (2 minutes here) the reconciler returns the spot nodes.
    _wait("everything powered down", lambda: _all_powered_down(burst), 300, burst)


def test_an_instance_killed_out_of_band_downs_its_node_and_the_job_requeues_and_completes(
    burst: Burst,
) -> None:
    job = _as_user(burst, "sbatch --parsable -p cloud -N1 --wrap 'sleep 20'").strip()
    _wait("the job runs", lambda: _job(burst, job).get("JobState") == "RUNNING", 240, burst)
    first = _job(burst, job)["NodeList"]
    (victim,) = [i for i, name in _live_instances(burst).items() if name == first]
    burst.ec2.terminate_instances(InstanceIds=[victim])  # a spot reclaim, or an operator's mistake
    _wait(
        "the reconciler downs the node",
        lambda: "instance gone" in _ctl(burst, f"scontrol show node {first}"),
        60,
        burst,
    )
    _wait("the job completed", lambda: _job(burst, job).get("JobState") == "COMPLETED", 420, burst)
    # Requeued once: its node, resumed again under the same name, is not taken DOWN a second time for
    # the instance killed here (gpucluster.power.resume_marks).
    assert int(_job(burst, job)["Restarts"]) == 1, _job_history(burst, job)
    # Its idle node is left up: the spot tests that follow take whichever spot node they are given.


# ------------------------------------------------------------------------------------------------ spot


def _spot_job(burst: Burst, steps: int) -> tuple[str, str, str]:
    """A reference job on the spot partition, running and past its first checkpoint: (job, node, instance)."""
    train = put_train_script(burst)
    job = _as_user(
        burst,
        f"sbatch --parsable -p spot -N1 --open-mode=append -o /tmp/train-%j.out {train} "
        f"--steps {steps} --step-seconds 1 --progress",
    ).strip()
    _wait("the spot job runs", lambda: _job(burst, job).get("JobState") == "RUNNING", 240, burst)
    node = _job(burst, job)["NodeList"]
    (instance,) = [i for i, name in _live_instances(burst).items() if name == node]

    def checkpointed() -> bool:
        if _job(burst, job).get("JobState") != "RUNNING":
            address = burst.runner.node_of(instance).address
            raise AssertionError(
                f"job {job} ended: {_job(burst, job)}\n"
                + burst.rack.ssh(
                    address, f"cat /tmp/train-{job}.out; cat /etc/gpucluster/checkpoint.env", check=False
                )
                + burst.rack.ssh(
                    address, "journalctl -u gpucluster-job-credentials -n 30 --no-pager", check=False
                )
            )
        return bool(complete_checkpoints(burst, job))

    _wait("its first checkpoint", checkpointed, 60, burst)
    return job, node, instance


def _notice_time(seconds: int = 120) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def _resumed_without_loss(burst: Burst, job: str, steps: int) -> None:
    _wait("the requeued job completed", lambda: _job(burst, job).get("JobState") == "COMPLETED", 480, burst)
    assert int(_job(burst, job)["Restarts"]) == 1, _job_history(burst, job)
    reached = checkpoint_record(burst, job, "progress/run-0.json")
    resumed = checkpoint_record(burst, job, "progress/run-1.json")
    assert reached and resumed, (reached, resumed)
    # The job honoured the signal: it resumed from the step it had reached, so no step was lost.
    assert resumed["resumed_from"] == reached["reached"], (reached, resumed)
    done = checkpoint_record(burst, job, "DONE.json")
    assert done == {"steps": steps, "value": uninterrupted_value(steps), "runs": 2}, done


def test_a_spot_notice_checkpoints_requeues_and_the_job_resumes_elsewhere_losing_nothing(
    burst: Burst,
) -> None:
    steps = 24  # 1 s steps (about 2 s with their progress record): the notice comes near step 8
    job, node, instance = _spot_job(burst, steps)
    address = burst.runner.node_of(instance).address
    # The contract reached the job: its own location, the interval cost prices, the signal.
    environment = burst.rack.ssh(
        address, f"cat /proc/$(pgrep -u {USER} -f slurm_script | head -1)/environ | tr '\\0' '\\n'"
    )
    assert f"GPUCLUSTER_CHECKPOINT_URI=s3://{BUCKET}/checkpoints/{USER}/{job}" in environment
    assert f"GPUCLUSTER_CHECKPOINT_INTERVAL_S={CHECKPOINT_INTERVAL_S}" in environment
    when = _notice_time()
    burst.imds.instances[instance].spot_action = {"action": "terminate", "time": when}
    _wait(
        "the agent drained the node",
        lambda: "spot interruption" in _ctl(burst, f"scontrol show node {node}"),
        15,
        burst,
    )
    _wait("the job is requeued", lambda: int(_job(burst, job).get("Restarts", "0")) == 1, 60, burst)
    # Its last checkpoint is the step it reached, complete (marker), in the versioned bucket.
    reached = checkpoint_record(burst, job, "progress/run-0.json")
    assert reached and complete_checkpoints(burst, job)[-1] == reached["reached"]
    versions = emulated_aws.client(RACK, "s3").list_object_versions(
        Bucket=BUCKET, Prefix=f"checkpoints/{USER}/{job}/"
    )
    assert all(v["VersionId"] != "null" for v in versions["Versions"])
    # Polled again and again, the same notice acted once.
    polls = [r for r in burst.imds.instances[instance].requests if r[1].endswith("/spot/instance-action")]
    time.sleep(12)
    journal = burst.rack.ssh(address, "journalctl -u gpucluster-spot-agent --no-pager -o cat")
    assert journal.count("interruption notice") == 1 and journal.count("sent SIGUSR1") == 1, journal
    assert len(
        [r for r in burst.imds.instances[instance].requests if r[1].endswith("/spot/instance-action")]
    ) > len(polls)
    # EC2 reclaims the instance at the notice time (here: now).
    burst.ec2.terminate_instances(InstanceIds=[instance])
    _resumed_without_loss(burst, job, steps)
    # The next test needs both spot nodes: it shows the reclaimed one came back with its drain cleared.


def test_a_rebalance_drains_without_killing_and_with_the_agent_dead_the_queue_backstop_acts(
    burst: Burst,
) -> None:
    steps = 34  # the backstop acts near step 17
    job, node, instance = _spot_job(burst, steps)
    address = burst.runner.node_of(instance).address
    burst.imds.instances[instance].rebalance = {"noticeTime": _notice_time(0)}
    _wait(
        "the agent drained the node",
        lambda: "rebalance recommendation" in _ctl(burst, f"scontrol show node {node}"),
        15,
        burst,
    )
    time.sleep(6)
    assert _job(burst, job)["JobState"] == "RUNNING"  # drained, not killed
    # The agent dies (or the VPN drops); EC2's warning still reaches the controller through EventBridge.
    burst.rack.ssh(address, "systemctl stop gpucluster-spot-agent")
    sqs = emulated_aws.client(RACK, "sqs")
    queue = sqs.get_queue_url(QueueName="gpucluster-testrackc-spot-events")["QueueUrl"]
    event = {
        "version": "0",
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": emulated_aws.REGION,
        "detail": {"instance-id": instance, "instance-action": "terminate"},
    }
    sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(event))
    _wait(
        "the reconciler signalled the job: it requeued",
        lambda: int(_job(burst, job).get("Restarts", "0")) == 1,
        60,
        burst,
    )
    assert "EventBridge" in _ctl(burst, f"scontrol show node {node}")
    burst.ec2.terminate_instances(InstanceIds=[instance])
    # Its two runs take both spot nodes (the first is drained and gone), one of them the previous test's
    # reclaimed node: so the reconciler returned that one undrained.
    _resumed_without_loss(burst, job, steps)


def test_on_a_cloud_node_a_job_user_reaches_neither_the_metadata_service_nor_the_munge_key(
    burst: Burst,
) -> None:
    # Last in the module: its job may land on a cloud node the spot tests left powered up.
    job = _as_user(burst, "sbatch --parsable -p cloud -N1 --wrap 'sleep 300'").strip()
    _wait("the job runs", lambda: _job(burst, job).get("JobState") == "RUNNING", 240, burst)
    node = _instance_node(burst, _job(burst, job)["NodeList"])
    token = "curl -sS -m 5 -X PUT -H X-aws-ec2-metadata-token-ttl-seconds:60 http://169.254.169.254/latest/api/token"
    user = burst.rack.ssh(node, f"su - {USER} -c '{token}' 2>&1; echo rc=$?", check=False)
    # The firewall drops the job user's packets: no connection (refused or timed out), so no token.
    assert re.search(r"rc=(7|28)$", user.strip()), user
    assert burst.rack.ssh(node, token).strip()  # root gets a session token
    no_token = burst.rack.ssh(
        node, "curl -s -o /dev/null -w '%{http_code}' http://169.254.169.254/latest/meta-data/"
    )
    assert no_token == "401"  # IMDSv2 only
    key = burst.rack.ssh(node, f"su - {USER} -c 'cat /etc/munge/munge.key' 2>&1; echo rc=$?", check=False)
    assert "Permission denied" in key and "rc=1" in key, key
    assert burst.rack.ssh(node, "stat -c '%U %a' /etc/munge/munge.key").strip() == "munge 400"
    _ctl(burst, f"scancel {job}")
