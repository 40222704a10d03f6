"""Slurm jobs that keep their GPUs a known fraction busy on a rack with the DCGM exporter mimic.

Each job runs `gpucluster-mimic-gpu-load FRACTION SECONDS` on the GPUs Slurm gave it and stamps, on its
node, when the load began and ended; Slurm's accounting says how long the job held its GPUs (the prolog
maps them to the job when it is allocated, the epilog clears them when it ends). From those, what
`gpucluster utilization` must report: allocated and engine-active GPU-hours.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster_rack.rack import Rack

STAMPS = "/var/tmp/gpucluster-known-load"


@dataclass(frozen=True)
class Load:
    """One job's load: the node, how many GPUs, the engine-active fraction and for how long."""

    node: str
    gpus: int
    fraction: float
    seconds: int


@dataclass(frozen=True)
class Held:
    """What a finished job did: GPU-seconds allocated (Slurm's elapsed) and engine-active."""

    allocated_gpu_s: float
    active_gpu_s: float


def submit(rack: Rack, controller: str, load: Load) -> str:
    """Submit the job from the controller; its ID."""
    stamp = f"{STAMPS}/$SLURM_JOB_ID"
    script = (
        f"mkdir -p {STAMPS} && date +%s.%N > {stamp}.start"
        f" && gpucluster-mimic-gpu-load {load.fraction} {load.seconds}"
        f" && date +%s.%N > {stamp}.end"
    )
    return rack.ssh(
        controller,
        f"sbatch --parsable -w {load.node} -N1 --gres=gpu:{load.gpus} --wrap '{script}'",
    ).strip()


def held(rack: Rack, controller: str, job: str, load: Load) -> Held:
    """The finished job's allocated GPU-seconds (sacct's ElapsedRaw) and active ones (its load stamps)."""
    elapsed = rack.ssh(controller, f"sacct -j {job} -X -n -P -o ElapsedRaw").strip()
    start, end = (
        float(rack.ssh(load.node, f"cat {STAMPS}/{job}.{edge}").strip()) for edge in ("start", "end")
    )
    return Held(load.gpus * float(elapsed), load.gpus * load.fraction * (end - start))


def finished(rack: Rack, controller: str, job: str) -> bool:
    """Whether accounting shows the job COMPLETED (a failed job fails the caller's check instead)."""
    state = rack.ssh(controller, f"sacct -j {job} -X -n -P -o State", check=False).strip()
    assert state in {"", "PENDING", "RUNNING", "COMPLETING", "COMPLETED"}, f"job {job}: {state}"
    return state == "COMPLETED"
