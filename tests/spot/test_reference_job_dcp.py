"""The PyTorch variant of the reference job (examples/spot_training/train_dcp.py): two ranks with DDP on
the CPU (gloo), torch.distributed.checkpoint shards in an emulated S3 (moto on loopback), started the way
`srun` starts tasks, signalled, requeued and restarted with SLURM_RESTART_COUNT raised."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.spot.emulated_s3 import BUCKET, PREFIX, client, contract_env, read_json, wait_for_progress

TRAIN = ROOT / "examples" / "spot_training" / "train_dcp.py"
RANKS = 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _start(
    endpoint: str, run: int, steps: int, scratch: Path, interval_s: float
) -> list[subprocess.Popen[str]]:
    """The job's ranks, as srun would start them (one process per task, rendezvous on the first node)."""
    port = _free_port()
    ranks = []
    for rank in range(RANKS):
        env = contract_env(endpoint, run, interval_s) | {
            "SLURM_PROCID": str(rank),
            "SLURM_NTASKS": str(RANKS),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        command = [sys.executable, str(TRAIN), "--steps", str(steps), "--step-seconds", "0.02"]
        ranks.append(
            subprocess.Popen(
                [*command, "--scratch", str(scratch), "--progress"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    return ranks


def _finish(ranks: list[subprocess.Popen[str]]) -> list[int]:
    outputs = [rank.communicate(timeout=180)[0] for rank in ranks]
    codes = [rank.returncode for rank in ranks]
    assert len(set(codes)) == 1, outputs
    return codes


def test_one_rank_signalled_checkpoints_all_and_the_resumed_run_ends_bit_for_bit(
    s3_endpoint: str, tmp_path: Path
) -> None:
    first = _start(s3_endpoint, 0, 150, tmp_path / "node-a", interval_s=3600)
    wait_for_progress(s3_endpoint, "progress/run-0.json", 40)
    first[1].send_signal(signal.SIGUSR1)  # ranks see the signal at different moments; they must agree
    assert _finish(first) == [99] * RANKS  # srun exits 99, the batch script with it: RequeueExit
    reached = read_json(s3_endpoint, "progress/run-0.json")["reached"]
    marker = read_json(s3_endpoint, f"step-{reached:09d}/COMPLETE")
    assert marker["step"] == reached and ".metadata" in marker["files"]

    # The requeued job lands on another node: a fresh staging directory, everything comes from S3.
    second = _start(s3_endpoint, 1, 150, tmp_path / "node-b", interval_s=3600)
    assert _finish(second) == [0] * RANKS
    assert read_json(s3_endpoint, "progress/run-1.json")["resumed_from"] == reached  # no step lost
    resumed = read_json(s3_endpoint, "DONE.json")

    s3 = client(s3_endpoint)
    for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)["Contents"]:
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])  # the same job id, from scratch
    uninterrupted = _start(s3_endpoint, 0, 150, tmp_path / "node-c", interval_s=3600)
    assert _finish(uninterrupted) == [0] * RANKS
    expected = read_json(s3_endpoint, "DONE.json")
    # Model and optimizer (momentum) restored exactly: the same parameters as a run never interrupted.
    assert resumed == {"steps": 150, "digest": expected["digest"], "runs": 2}


def test_a_checkpoint_with_a_damaged_shard_or_no_marker_is_never_resumed_from(
    s3_endpoint: str, tmp_path: Path
) -> None:
    first = _start(s3_endpoint, 0, 60, tmp_path / "node-a", interval_s=0.2)
    assert _finish(first) == [0] * RANKS
    s3 = client(s3_endpoint)
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/step-")["Contents"]
    steps = sorted({int(o["Key"].split("/")[-2].removeprefix("step-")) for o in listing}, reverse=True)
    assert len(steps) >= 3, steps
    newest, second, third = steps[:3]
    # The newest: a shard rewritten after its manifest (bit rot, a racing writer); the second: its marker
    # never written (the instance vanished mid-checkpoint).
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-{newest:09d}/__0_0.distcp", Body=b"not a shard")
    s3.delete_object(Bucket=BUCKET, Key=f"{PREFIX}/step-{second:09d}/COMPLETE")
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/step-{third:09d}/COMPLETE")["Body"].read())

    restart = _start(s3_endpoint, 1, 70, tmp_path / "node-b", interval_s=3600)
    assert _finish(restart) == [0] * RANKS
    assert read_json(s3_endpoint, "progress/run-1.json")["resumed_from"] == third
