"""The reference spot job (examples/spot_training/train.py) against an emulated S3 (a moto server on
loopback, versioned bucket), run as Slurm would run it: a process that gets the contract's signal, exits to
be requeued, and starts again with SLURM_RESTART_COUNT raised."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys

from tests.conftest import ROOT
from tests.spot.emulated_s3 import BUCKET, PREFIX, client, contract_env, read_json, wait_for_progress

TRAIN = ROOT / "examples" / "spot_training" / "train.py"


def _start(
    endpoint: str, run: int, steps: int, *extra: str, interval_s: float = 0.5
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(TRAIN), "--steps", str(steps), "--step-seconds", "0.05", *extra],
        env=contract_env(endpoint, run, interval_s),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def uninterrupted_value(steps: int) -> float:
    """The reference job's model after `steps` steps without interruption (its State.advance, restated)."""
    value = 0.0
    for step in range(1, steps + 1):
        value = (value * 31 + step) % 1_000_003
    return value


def test_the_signal_checkpoints_requeues_and_the_restart_loses_nothing(s3_endpoint: str) -> None:
    first = _start(s3_endpoint, 0, 200, "--progress", interval_s=3600)  # no periodic checkpoint
    wait_for_progress(s3_endpoint, "progress/run-0.json", 20)
    first.send_signal(signal.SIGUSR1)
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 99, out  # Slurm's RequeueExit puts it back in the queue
    reached = read_json(s3_endpoint, "progress/run-0.json")["reached"]
    second = _start(s3_endpoint, 1, 200, "--progress")
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out
    resumed_from = read_json(s3_endpoint, "progress/run-1.json")["resumed_from"]
    assert resumed_from == reached  # the checkpoint on the signal: not one step lost
    done = read_json(s3_endpoint, "DONE.json")
    assert done == {"steps": 200, "value": uninterrupted_value(200), "runs": 2}


def test_a_job_killed_without_a_signal_loses_at_most_one_interval(s3_endpoint: str) -> None:
    interval_s, step_s = 0.5, 0.05
    first = _start(s3_endpoint, 0, 1000, "--progress", interval_s=interval_s)
    wait_for_progress(s3_endpoint, "progress/run-0.json", 60)
    first.kill()  # the instance vanished: no signal, no last checkpoint
    first.communicate(timeout=30)
    reached = read_json(s3_endpoint, "progress/run-0.json")["reached"]
    second = _start(s3_endpoint, 1, 120, "--progress", interval_s=interval_s)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out
    resumed_from = read_json(s3_endpoint, "progress/run-1.json")["resumed_from"]
    steps_per_interval = interval_s / step_s
    # Each step also writes its progress record, so an interval holds at most steps_per_interval steps.
    # A kill right after a checkpoint loses nothing; any other loses less than an interval's steps.
    assert resumed_from > 0 and 0 <= reached - resumed_from <= steps_per_interval + 1, (reached, resumed_from)


def test_a_checkpoint_without_its_marker_is_never_resumed_from(s3_endpoint: str) -> None:
    s3 = client(s3_endpoint)
    good = json.dumps({"step": 5, "value": uninterrupted_value(5)}).encode()
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-000000005/state.json", Body=good)
    s3.put_object(
        Bucket=BUCKET, Key=f"{PREFIX}/step-000000005/COMPLETE", Body=hashlib.sha256(good).hexdigest().encode()
    )
    # Cut short by the interruption: state written, marker never.
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-000000009/state.json", Body=b'{"step": 9, "value": 1')
    run = _start(s3_endpoint, 1, 12, "--progress")
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 0, out
    assert read_json(s3_endpoint, "progress/run-1.json")["resumed_from"] == 5
    assert read_json(s3_endpoint, "DONE.json")["value"] == uninterrupted_value(12)
