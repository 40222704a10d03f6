"""Spot timings on the burst rack: how fast a notice reaches jobs, and what an interruption costs a job.

Needs root and `make rack-deps`; about fifteen minutes (it boots the burst rack of
gpucluster_rack/burst_rack.py).
1. Notice → signal delivered, five times on one spot node: a job that records when its batch shell gets
   the signal; the metadata emulator starts answering the notice at t0 (the agent polls every 5 s, so the
   expected figure is half a poll period plus scancel). Target: ≤ 6 s (the median, and each run).
2. One interruption of the reference job (examples/spot_training/train.py, 1 s steps, the contract's 10 s
   interval): notice → checkpoint complete (its marker's time in S3), notice → the job running again on a
   new node (Slurm holds a requeued job for its credential lifetime, 120 s by default and 30 s on the
   burst rack, and the new node boots), and the steps lost against the steps in one interval. Targets:
   0 jobs lost; lost ≤ one interval.
Clocks: the nodes are containers on this host, so their wall clock is the host's.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from gpucluster_rack import emulated_aws  # noqa: E402

RUNS = 5
STEPS = 40
TRAP = "trap 'date +%s.%N >> /tmp/signalled; exit 0' USR1; while :; do sleep 0.1; done"


def _notice(seconds_ahead: int) -> dict[str, str]:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_ahead))
    return {"action": "terminate", "time": when}


class Bench:
    """The burst rack and the few things the measurements ask of it."""

    def __init__(self, burst: Any) -> None:
        self.burst = burst
        self.node = self.instance = self.address = ""

    def ctl(self, command: str) -> str:
        return str(self.burst.rack.ssh("ctl", command, timeout=600))

    def field(self, job: str, name: str) -> str:
        return dict(re.findall(r"(\w+)=(\S*)", self.ctl(f"scontrol show job -o {job}"))).get(name, "")

    def wait(self, what: str, check: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise RuntimeError(f"not within {timeout_s:.0f} s: {what}")
            time.sleep(0.2)

    def signals(self) -> list[str]:
        return str(self.burst.rack.ssh(self.address, "cat /tmp/signalled 2>/dev/null || true")).split()

    def signal_latency(self, run: int, user: str) -> float:
        """Submit the trap job (first on any spot node, then on the same), notice, time the signal."""
        from gpucluster_rack.burst_rack import node_tag  # noqa: PLC0415

        where = f"-w {self.node}" if self.node else ""
        job = self.ctl(f'su - {user} -c "sbatch --parsable -p spot -N1 {where} --wrap \\"{TRAP}\\""').strip()
        self.wait("the signal job runs", lambda: self.field(job, "JobState") == "RUNNING", 240)
        if not self.node:
            self.node = self.field(job, "NodeList")
            (self.instance,) = [i for i in self.burst.runner.running if node_tag(self.burst, i) == self.node]
            self.address = self.burst.runner.node_of(self.instance).address
        before = len(self.signals())
        t0 = time.time()
        self.burst.imds.instances[self.instance].spot_action = _notice(120 + run)  # a new time: a new notice
        self.wait("the signal arrives", lambda: len(self.signals()) > before, 30)
        latency = float(self.signals()[-1]) - t0
        self.wait("the job left", lambda: self.field(job, "JobState") not in ("RUNNING", "COMPLETING"), 60)
        self.burst.imds.instances[self.instance].spot_action = None
        self.ctl(f"scontrol update nodename={self.node} state=resume")
        return latency

    def interruption(self, user: str, bucket: str, interval_s: int) -> tuple[float, float, int]:
        """The reference job interrupted once: notice → checkpoint, notice → running again, steps lost."""
        from gpucluster_rack.burst_rack import checkpoint_record, put_train_script  # noqa: PLC0415

        train = put_train_script(self.burst)
        job = self.ctl(
            f"su - {user} -c 'sbatch --parsable -p spot -N1 -w {self.node} -o /tmp/train-%j.out {train}"
            f" --steps {STEPS} --step-seconds 1 --progress'"
        ).strip()
        self.wait("the reference job runs", lambda: self.field(job, "JobState") == "RUNNING", 240)
        time.sleep(interval_s + 5)
        t0 = time.time()
        self.burst.imds.instances[self.instance].spot_action = _notice(120)
        self.wait("requeued", lambda: self.field(job, "Restarts") == "1", 60)
        reached = checkpoint_record(self.burst, job, "progress/run-0.json")
        assert reached is not None
        marker = f"checkpoints/{user}/{job}/step-{reached['reached']:09d}/COMPLETE"
        s3 = emulated_aws.client(self.burst.rack.name, "s3")
        checkpointed = s3.head_object(Bucket=bucket, Key=marker)["LastModified"].timestamp()
        self.burst.ec2.terminate_instances(InstanceIds=[self.instance])  # EC2 reclaims it
        self.wait("running again", lambda: self.field(job, "JobState") == "RUNNING", 480)
        running_again = time.time()
        self.wait("completed", lambda: self.field(job, "JobState") == "COMPLETED", 240)
        resumed = checkpoint_record(self.burst, job, "progress/run-1.json")
        assert resumed is not None
        return checkpointed - t0, running_again - t0, int(reached["reached"] - resumed["resumed_from"])


def main() -> None:
    """Boot the burst rack, measure, print the figures."""
    from gpucluster_rack.burst_rack import BUCKET, CHECKPOINT_INTERVAL_S, USER, burst_rack  # noqa: PLC0415

    with burst_rack("benchspot") as burst:
        if burst.first.rc != 0:
            raise RuntimeError(burst.first.output[-3000:])
        bench = Bench(burst)
        latencies = [bench.signal_latency(run, USER) for run in range(RUNS)]
        to_checkpoint, to_running, lost = bench.interruption(USER, BUCKET, CHECKPOINT_INTERVAL_S)
        # How long Slurm holds a requeued job (the credential lifetime the burst rack's cluster file sets).
        hold = yaml.safe_load(burst.rack.cluster_file.read_text())["slurm"]["credential_lifetime_s"]
    print("notice → signal delivered (s):", " ".join(f"{x:.2f}" for x in latencies))
    median = statistics.median(latencies)
    met = median <= 6 and max(latencies) <= 6
    print(f"median {median:.2f} s, max {max(latencies):.2f} s (target ≤ 6 s): {'met' if met else 'NOT met'}")
    print(f"notice → checkpoint complete: {to_checkpoint:.1f} s (S3 times have 1 s resolution)")
    print(f"notice → job running again: {to_running:.1f} s (a {hold} s requeue hold, then a new node boots)")
    print(f"steps lost: {lost} of {CHECKPOINT_INTERVAL_S} in one interval; jobs lost: 0 (it completed)")


if __name__ == "__main__":
    main()
