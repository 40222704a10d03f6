"""`make demo`'s burst part: a rack whose slurmctld bursts a 2-node job to emulated cloud nodes.

The rack converges against an emulated AWS (gpucluster_rack/burst_rack.py), a user's job runs on two cloud
nodes the ResumeProgram launched, and after the idle time the nodes power down and their instances end.
Then the reference spot job gets a two-minute notice, checkpoints on the signal, is requeued and resumes
on a new node from that checkpoint.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable

from gpucluster_rack.burst_rack import (
    CHECKPOINT_INTERVAL_S,
    IDLE_S,
    USER,
    Burst,
    burst_rack,
    checkpoint_record,
    node_tag,
    put_train_script,
)
from gpucluster_rack.sh import progress
from gpucluster_rack.slurm_state import report_left_drained

DEMO_RACK = "demoburst"


def _ctl(burst: Burst, command: str) -> str:
    return burst.rack.ssh("ctl", command, timeout=600)


def main() -> int:
    """Burst one job, show the nodes at each step, wait for them to power down."""
    with burst_rack(DEMO_RACK, rerun=False) as burst:
        if burst.first.rc != 0:
            print(burst.first.output[-4000:], file=sys.stderr)
            return 1
        print(_ctl(burst, "sinfo"))
        command = "sbatch --parsable -W -p cloud -N2 -o /tmp/demo-%j.out --wrap 'srun hostname'"
        print(f"$ su - {USER} -c {json.dumps(command)}   # -W: waits for the job")
        started = time.monotonic()
        job = _ctl(burst, f"su - {USER} -c {json.dumps(command)}").strip()
        progress(f"job {job} ran on two cloud nodes, {time.monotonic() - started:.0f} s from submit to done")
        print(_ctl(burst, f"scontrol show job {job} | grep -E 'JobState|NodeList=|RunTime'"))
        print(_ctl(burst, "sinfo"))
        progress(f"waiting for the idle nodes to power down (idle time {IDLE_S} s)")
        for _ in range(90):
            states = _ctl(burst, "sinfo -h -p cloud -o %t").split()
            if states == ["idle~"]:
                break
            time.sleep(3)
        print(_ctl(burst, "sinfo"))
        print(f"instances still running: {len(burst.runner.running)}")
        resumed = _spot_interruption(burst)
        return 1 if report_left_drained(burst.rack) else resumed


def _spot_interruption(burst: Burst) -> int:
    """The reference job on a spot node gets a two-minute notice, checkpoints, requeues and resumes."""
    train = put_train_script(burst)
    command = (
        f"sbatch --parsable -p spot -N1 -o /tmp/train-%j.out {train} --steps 40 --step-seconds 1 --progress"
    )
    print(f"$ su - {USER} -c {json.dumps(command)}")
    job = _ctl(burst, f"su - {USER} -c {json.dumps(command)}").strip()
    _until(burst, job, lambda fields: fields.get("JobState") == "RUNNING")
    time.sleep(CHECKPOINT_INTERVAL_S + 5)  # past its first checkpoint
    node = _fields(burst, job)["NodeList"]
    (instance,) = [i for i in burst.runner.running if node_tag(burst, i) == node]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 120))
    progress(f"EC2 gives {node} ({instance}) its two-minute notice: terminate at {when}")
    burst.imds.instances[instance].spot_action = {"action": "terminate", "time": when}
    _until(burst, job, lambda fields: fields.get("Restarts") == "1")
    print(_ctl(burst, f"sinfo -R -n {node}"))
    reached = checkpoint_record(burst, job, "progress/run-0.json") or {}
    progress(f"job {job} checkpointed at step {reached.get('reached')} on the signal and was requeued")
    burst.ec2.terminate_instances(InstanceIds=[instance])
    progress("EC2 reclaims the instance; Slurm holds the requeued job 30 s here, then a new spot node boots")
    _until(burst, job, lambda fields: fields.get("JobState") == "COMPLETED", timeout_s=600)
    resumed = checkpoint_record(burst, job, "progress/run-1.json") or {}
    print(_ctl(burst, f"scontrol show job {job} | grep -E 'JobState|Restarts|NodeList='"))
    done = checkpoint_record(burst, job, "DONE.json")
    progress(f"resumed from step {resumed.get('resumed_from')}: {done}")
    return 0 if done and resumed.get("resumed_from") == reached.get("reached") else 1


def _fields(burst: Burst, job: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", _ctl(burst, f"scontrol show job -o {job}")))


def _until(burst: Burst, job: str, done: Callable[[dict[str, str]], bool], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not done(_fields(burst, job)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job}: {_fields(burst, job)}")
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
