#!/usr/bin/env python3
"""A reference training job that honours gpucluster's checkpoint contract (README, "Spot").

The contract comes in the environment of every job on a cloud node (the task prolog sets it):
- GPUCLUSTER_CHECKPOINT_URI: s3://bucket/prefix/<user>/<job id>/, this job's own location; a requeued job
  keeps its id and so finds its checkpoints;
- GPUCLUSTER_CHECKPOINT_INTERVAL_S: how often to checkpoint (spot nodes: the Young/Daly interval);
- GPUCLUSTER_CHECKPOINT_SIGNAL: the signal a spot interruption notice brings (default USR1);
- GPUCLUSTER_REQUEUE_EXIT: exit with it after the signal's checkpoint and Slurm requeues the job at once;
- AWS_CONFIG_FILE: credentials for the user's own prefix (credential_process; boto3 refreshes them).

Each checkpoint is `step-<n>/state.json`, then `step-<n>/COMPLETE` (the state's SHA-256) written last,
so a checkpoint cut short by the interruption is never resumed from. On a restart (SLURM_RESTART_COUNT)
the job resumes from the newest complete checkpoint. The "model" is a number updated deterministically
per step, so a resumed run must end with exactly the value of an uninterrupted one.

    sbatch -p spot --open-mode=append --wrap 'python3 train.py --steps 2000 --step-seconds 1'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import boto3


@dataclass
class State:
    """Everything training needs to continue: the step reached and the model."""

    step: int = 0
    value: float = 0.0

    def advance(self) -> None:
        """One training step (deterministic, so interrupted and uninterrupted runs can be compared)."""
        self.step += 1
        self.value = (self.value * 31 + self.step) % 1_000_003


class Checkpoints:
    """This job's checkpoints under its contract URI, through a real S3 client."""

    def __init__(self, uri: str) -> None:
        parsed = urlparse(uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise SystemExit(f"GPUCLUSTER_CHECKPOINT_URI={uri!r} is not s3://bucket/prefix")
        self.bucket, self.prefix = parsed.netloc, parsed.path.strip("/")
        # boto3 before 1.28 ignores AWS_ENDPOINT_URL (an emulated AWS), so it is passed explicitly.
        self.s3 = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None)

    def _key(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts])

    def save(self, state: State) -> None:
        """Write the state, then its completion marker: a reader trusts only marked checkpoints."""
        body = json.dumps({"step": state.step, "value": state.value}).encode()
        name = f"step-{state.step:09d}"
        self.s3.put_object(Bucket=self.bucket, Key=self._key(name, "state.json"), Body=body)
        marker = hashlib.sha256(body).hexdigest().encode()
        self.s3.put_object(Bucket=self.bucket, Key=self._key(name, "COMPLETE"), Body=marker)

    def newest(self) -> State | None:
        """The newest complete checkpoint whose state matches its marker; None when there is none."""
        steps: set[str] = set()
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key("step-")):
            for item in page.get("Contents", []):
                name, _, leaf = item["Key"].removeprefix(self.prefix + "/").partition("/")
                if leaf == "COMPLETE":
                    steps.add(name)
        for name in sorted(steps, reverse=True):
            body = self._read(self._key(name, "state.json"))
            marker = self._read(self._key(name, "COMPLETE"))
            if body is not None and marker == hashlib.sha256(body).hexdigest().encode():
                data = json.loads(body)
                return State(step=int(data["step"]), value=float(data["value"]))
        return None

    def record(self, name: str, data: dict[str, Any]) -> None:
        """A small JSON record beside the checkpoints (progress, the final result)."""
        self.s3.put_object(Bucket=self.bucket, Key=self._key(name), Body=json.dumps(data).encode())

    def _read(self, key: str) -> bytes | None:
        try:
            body: bytes = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        return body


def main(argv: list[str] | None = None) -> int:
    """Train for --steps, checkpointing at the contract's interval and on its signal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--step-seconds", type=float, default=1.0)
    parser.add_argument("--progress", action="store_true", help="record the step reached after every step")
    args = parser.parse_args(argv)

    env = os.environ
    store = Checkpoints(env["GPUCLUSTER_CHECKPOINT_URI"])
    interval_s = float(env.get("GPUCLUSTER_CHECKPOINT_INTERVAL_S", "600"))
    requeue_exit = int(env.get("GPUCLUSTER_REQUEUE_EXIT", "99"))
    run = int(env.get("SLURM_RESTART_COUNT", "0"))
    signalled = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal signalled
        signalled = True  # acted on between steps: a step is never checkpointed half done

    signal.signal(getattr(signal, "SIG" + env.get("GPUCLUSTER_CHECKPOINT_SIGNAL", "USR1")), on_signal)

    state = (store.newest() if run > 0 else None) or State()
    resumed_from = state.step
    print(f"run {run}: starting at step {state.step}", flush=True)
    last_checkpoint = time.monotonic()
    while state.step < args.steps:
        time.sleep(args.step_seconds)  # the training step's work
        state.advance()
        if args.progress:
            store.record(f"progress/run-{run}.json", {"reached": state.step, "resumed_from": resumed_from})
        if signalled:
            store.save(state)
            print(f"run {run}: signalled; checkpointed step {state.step}, asking to be requeued", flush=True)
            return requeue_exit
        if time.monotonic() - last_checkpoint >= interval_s:
            store.save(state)
            last_checkpoint = time.monotonic()
            print(f"run {run}: checkpointed step {state.step}", flush=True)
    store.save(state)
    store.record("DONE.json", {"steps": state.step, "value": state.value, "runs": run + 1})
    print(f"run {run}: completed {state.step} steps, value {state.value:g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
