"""Which nccl-tests runs the fabric gate launches: one across every candidate node, then a ring of pairs.

Each run is one `srun` inside the acceptance reservation, one MPI rank per GPU, so NCCL's traffic
between nodes crosses the fabric under test. `--mpi=pmix`: of the plugins Debian 12's Slurm 22.05 offers
(`srun --mpi=list`: pmix, none, cray_shasta, pmi2), Debian's OpenMPI 4.1 starts only under PMIx; with
pmi2 or none MPI_Init aborts ("OMPI was not built with SLURM's PMI support"), seen on the test rack. A ring
puts every node in two pairs: a node whose two pairs both fail is to blame, a lone failing pair is
the link between its nodes. The pairs run one after another; they share nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpucluster.accept.declared import Declared

_SIZE_UNITS: Final = {"K": 1024, "M": 1024**2, "G": 1024**3}
WHOLE_RUN: Final = "all"


@dataclass(frozen=True, kw_only=True)
class Launch:
    """How the playbook launches a run: the reservation, the MPI-built binary and a time limit."""

    reservation: str
    all_reduce_perf: str
    time_limit_min: int = 15
    wait_for_nodes_s: int = 300
    mpi: str = "pmix"


@dataclass(frozen=True)
class PlannedRun:
    """One all_reduce_perf across `hosts`, by the exact argv the controller runs."""

    name: str
    hosts: tuple[str, ...]
    argv: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """The run as the playbook reads it."""
        return {"name": self.name, "hosts": list(self.hosts), "argv": list(self.argv)}


def ring_pairs(hosts: Sequence[str]) -> list[tuple[str, str]]:
    """Each node with the next, the last with the first; two nodes make one pair, fewer none."""
    if len(hosts) < 2:
        return []
    if len(hosts) == 2:
        return [(hosts[0], hosts[1])]
    return [(hosts[i], hosts[(i + 1) % len(hosts)]) for i in range(len(hosts))]


def _size_bytes(size: str) -> int:
    return int(size[:-1]) * _SIZE_UNITS[size[-1]]


def ranks_per_node(gpus: int, cpus: int) -> int:
    """A rank per GPU; fewer, each driving several GPUs (-g), where Slurm counts fewer CPUs than GPUs.

    Slurm refuses --ntasks-per-node above a node's CPU count, --overcommit or not (seen on the test
    rack, 8 declared GPUs on 2 CPUs); real GPU nodes have far more CPUs than GPUs.
    """
    return max(r for r in range(1, gpus + 1) if gpus % r == 0 and r <= max(cpus, 1))


def srun_argv(nodes: Sequence[Declared], launch: Launch) -> tuple[str, ...]:
    """The srun of all_reduce_perf over `nodes`: every GPU (the fewest of any node), the largest size."""
    gpus = min(d.gpu_count for d in nodes)
    ranks = ranks_per_node(gpus, min(d.cpu_count for d in nodes))
    size = max((d.nccl_test_size for d in nodes), key=_size_bytes)
    return (
        "srun",
        f"--reservation={launch.reservation}",
        f"--nodelist={','.join(d.host for d in nodes)}",
        f"--nodes={len(nodes)}",
        f"--ntasks-per-node={ranks}",
        f"--gres=gpu:{gpus}",
        "--exclusive",
        f"--mpi={launch.mpi}",
        f"--time={launch.time_limit_min}",
        # A run waits this long for its nodes: after a failed launch they stay COMPLETING while slurmd
        # cleans up (KillWait and more); the next pair must not fail for that.
        f"--immediate={launch.wait_for_nodes_s}",
        "--job-name=gpucluster-accept-fabric",
        launch.all_reduce_perf,
        *("-b", size, "-e", size, "-f", "2", "-g", str(gpus // ranks)),
    )


def plan_runs(nodes: Sequence[Declared], launch: Launch) -> list[PlannedRun]:
    """The whole-set run (when there are more than two nodes) and the ring's pairs, in that order."""
    by_host = {d.host: d for d in nodes}
    pairs = ring_pairs([d.host for d in nodes])
    runs = [PlannedRun(f"{a}+{b}", (a, b), srun_argv([by_host[a], by_host[b]], launch)) for a, b in pairs]
    if len(nodes) > 2:
        runs.insert(0, PlannedRun(WHOLE_RUN, tuple(by_host), srun_argv(nodes, launch)))
    return runs


def left_out(node: Declared) -> str | None:
    """Why a node cannot take part in the fabric test, or None when it can."""
    if node.gpu_count == 0:
        return "the profile declares no GPUs"
    if node.min_multi_node_busbw_gbs is None:
        return "the profile declares no HCAs"
    return None
