#!/usr/bin/env python3
"""The checkpoint contract for a distributed PyTorch job: torch.distributed.checkpoint shards in S3.

The same contract as train.py (README, "Spot"), for a job of many ranks started by `srun` (one task per
GPU; RANK/WORLD_SIZE from torchrun are honoured too). What changes with many ranks:
- every rank takes the signal at its own moment, so the ranks agree each step (one all_reduce of two
  flags: signalled, interval due) and all checkpoint the same step;
- `dcp.save` writes each rank's shard files into a node-local directory; each rank uploads the files it
  wrote, rank 0 the `.metadata` too, and when all have uploaded rank 0 writes `COMPLETE` last: a
  manifest of every file with its SHA-256. A checkpoint is only as good as its manifest;
- on a restart rank 0 picks the newest complete checkpoint, every rank fetches and verifies its files
  and `dcp.load` restores model and optimizer (momentum included), so the resumed run ends bit for bit
  where an uninterrupted one would.

Under Slurm the signal (`scancel --full`) reaches the batch shell too, and bash dies of USR1 unless it
ignores it; srun forwards it to the tasks:

    #!/bin/bash
    #SBATCH -p spot -N 2 --ntasks-per-node=8 --gpus-per-node=8 --open-mode=append
    trap '' USR1
    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) MASTER_PORT=29500
    srun python3 train_dcp.py --steps 20000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlparse

import boto3
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

METADATA = ".metadata"  # the file dcp.save's coordinator (rank 0) writes beside the shards


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ShardedCheckpoints:
    """This job's DCP checkpoints under its contract URI: shards staged on local disk, kept in S3."""

    def __init__(self, uri: str, scratch: Path) -> None:
        parsed = urlparse(uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise SystemExit(f"GPUCLUSTER_CHECKPOINT_URI={uri!r} is not s3://bucket/prefix")
        self.bucket, self.prefix = parsed.netloc, parsed.path.strip("/")
        self.scratch = scratch
        # boto3 before 1.28 ignores AWS_ENDPOINT_URL (an emulated AWS), so it is passed explicitly.
        self.s3 = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None)
        self.rank = dist.get_rank()

    def _key(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts])

    def save(self, step: int, state: dict[str, Any]) -> None:
        """All ranks: write the shards, upload them; rank 0 then writes the manifest, last."""
        name = f"step-{step:09d}"
        local = self.scratch / name
        metadata = dcp.save(state, checkpoint_id=local)
        # FileSystemWriter names each rank's files "__<rank>_<n>.distcp"; ranks on one node share `local`.
        mine = sorted(p.name for p in local.iterdir() if p.name.startswith(f"__{self.rank}_"))
        if self.rank == 0:
            mine.append(METADATA)
        uploaded = {}
        for file in mine:
            self.s3.upload_file(str(local / file), self.bucket, self._key(name, file))
            uploaded[file] = _sha256(local / file)
        gathered: list[dict[str, str] | None] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, uploaded)
        if self.rank == 0:
            manifest = {file: sha for files in gathered if files for file, sha in files.items()}
            needed = {info.relative_path for info in (metadata.storage_data or {}).values()}
            if not needed <= manifest.keys():
                raise RuntimeError(f"{name}: shards {sorted(needed - manifest.keys())} were not uploaded")
            body = json.dumps({"step": step, "files": manifest}, sort_keys=True).encode()
            self.s3.put_object(Bucket=self.bucket, Key=self._key(name, "COMPLETE"), Body=body)
        dist.barrier()  # nobody moves on (or exits to be requeued) before the marker is written

    def restore(self, state: dict[str, Any]) -> int | None:
        """All ranks: load the newest checkpoint every rank could fetch intact; its step, or None."""
        candidates: list[Any] = [self._complete_checkpoints() if self.rank == 0 else None]
        dist.broadcast_object_list(candidates, src=0)
        for step, files in candidates[0]:
            local = self.scratch / "restore" / f"step-{step:09d}"
            intact = torch.tensor([1 if self._fetch(step, files, local) else 0])
            dist.all_reduce(intact, op=dist.ReduceOp.MIN)
            if intact.item():
                dcp.load(state, checkpoint_id=local)
                return int(step)
        return None

    def _complete_checkpoints(self) -> list[tuple[int, dict[str, str]]]:
        found = []
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key("step-")):
            for item in page.get("Contents", []):
                if item["Key"].endswith("/COMPLETE"):
                    body = self.s3.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
                    marker = json.loads(body)
                    found.append((int(marker["step"]), dict(marker["files"])))
        return sorted(found, reverse=True)

    def _fetch(self, step: int, files: dict[str, str], local: Path) -> bool:
        local.mkdir(parents=True, exist_ok=True)
        for file, sha in files.items():
            # Ranks on one node fetch into one directory: each writes a temporary file, then renames.
            handle, part = tempfile.mkstemp(dir=local, prefix=f".{file}.")
            os.close(handle)
            try:
                self.s3.download_file(self.bucket, self._key(f"step-{step:09d}", file), part)
            except self.s3.exceptions.ClientError:
                os.unlink(part)
                return False
            if _sha256(Path(part)) != sha:
                os.unlink(part)
                return False
            os.replace(part, local / file)
        return True

    def record(self, name: str, data: dict[str, Any]) -> None:
        """A small JSON record beside the checkpoints (progress, the final result)."""
        self.s3.put_object(Bucket=self.bucket, Key=self._key(name), Body=json.dumps(data).encode())


def _init_distributed() -> torch.device:
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "0")))
    world = int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", "1")))
    if torch.cuda.is_available():
        device = torch.device("cuda", int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", "0"))))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", rank=rank, world_size=world)
        return device
    dist.init_process_group("gloo", rank=rank, world_size=world)
    return torch.device("cpu")


class Trainer:
    """One rank of the job: a small DDP model, its optimizer, and the rank's share of the checkpoints."""

    def __init__(self, device: torch.device, store: ShardedCheckpoints) -> None:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
        self.model = DistributedDataParallel(net)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.device, self.store, self.rank = device, store, dist.get_rank()

    def _state(self) -> dict[str, Any]:
        model_state, optim_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optim": optim_state}

    def save(self, step: int) -> None:
        """Checkpoint model and optimizer at `step` (all ranks together)."""
        self.store.save(step, self._state())

    def restore(self) -> int:
        """Load the newest complete checkpoint; the step to go on from (0 when there is none)."""
        state = self._state()
        step = self.store.restore(state)
        if step is None:
            return 0
        set_state_dict(
            self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
        )
        return step

    def train(self, step: int) -> None:
        """One training step on this rank's data for `step`; DDP averages the gradients."""
        # The data is a function of (step, rank), so a resumed run sees what an uninterrupted one saw.
        generator = torch.Generator().manual_seed(step * 1_000_003 + self.rank)
        inputs = torch.randn(32, 16, generator=generator)
        target = inputs.sum(dim=1, keepdim=True)
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(inputs.to(self.device)), target.to(self.device))
        loss.backward()
        self.optimizer.step()

    def digest(self) -> str:
        """SHA-256 of the parameters: equal for a resumed and an uninterrupted run."""
        digest = hashlib.sha256()
        for name, tensor in sorted(self.model.module.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Train for --steps with DDP, checkpointing with DCP at the contract's interval and on its signal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--step-seconds", type=float, default=0.0, help="extra time per step (for tests)")
    parser.add_argument("--scratch", type=Path, help="node-local staging directory (default: under $TMPDIR)")
    parser.add_argument("--progress", action="store_true", help="rank 0 records the step reached each step")
    args = parser.parse_args(argv)

    env = os.environ
    signalled = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal signalled
        signalled = True  # acted on between steps, by all ranks together

    signal.signal(getattr(signal, "SIG" + env.get("GPUCLUSTER_CHECKPOINT_SIGNAL", "USR1")), on_signal)
    device = _init_distributed()
    rank, run = dist.get_rank(), int(env.get("SLURM_RESTART_COUNT", "0"))
    scratch = (
        args.scratch or Path(tempfile.gettempdir()) / f"gpucluster-dcp-{env.get('SLURM_JOB_ID', 'local')}"
    )
    store = ShardedCheckpoints(env["GPUCLUSTER_CHECKPOINT_URI"], scratch)
    interval_s = float(env.get("GPUCLUSTER_CHECKPOINT_INTERVAL_S", "600"))
    trainer = Trainer(device, store)
    step = resumed_from = trainer.restore() if run > 0 else 0
    if rank == 0:
        print(f"run {run}: {dist.get_world_size()} ranks starting at step {step}", flush=True)
    last_checkpoint = time.monotonic()
    while step < args.steps:
        trainer.train(step)
        step += 1
        time.sleep(args.step_seconds)
        if args.progress and rank == 0:
            store.record(f"progress/run-{run}.json", {"reached": step, "resumed_from": resumed_from})
        due = time.monotonic() - last_checkpoint >= interval_s
        flags = torch.tensor([int(signalled), int(due)], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)  # one rank signalled or due: all checkpoint now
        if flags.any().item():
            trainer.save(step)
            last_checkpoint = time.monotonic()
        if flags[0].item():
            if rank == 0:
                print(f"run {run}: signalled; checkpointed step {step}, asking to be requeued", flush=True)
            _leave(int(env.get("GPUCLUSTER_REQUEUE_EXIT", "99")))
    trainer.save(step)
    if rank == 0:
        store.record("DONE.json", {"steps": step, "digest": trainer.digest(), "runs": run + 1})
        print(f"run {run}: completed {step} steps", flush=True)
    _leave(0)


def _leave(code: int) -> NoReturn:
    """Leave the process group and exit with `code` at once, without Python tearing down the rest."""
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # DDP's reducer holds the Gloo process group; freeing it at interpreter teardown waits, GIL held, for a
    # worker thread that needs the GIL to free the last collective's tensors: a hang about one exit in ten
    # here (https://github.com/pytorch/pytorch/issues/56297). Every checkpoint and record is written.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
