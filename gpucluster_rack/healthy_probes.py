"""Recorded healthy probe outputs on a test-rack node, so accept.yml can see a node that passes.

The nodes have no GPUs or HCAs: acceptance fails them, as it must. To show what happens to a node that
passes (and to an operator's drain on one), these commands print the healthy samples of
tests/accept/samples/healthy (8 × H100 SXM, 8 NDR HCAs) instead; all_reduce_perf launched by srun
(the fabric gate) prints the two-node sample from rank 0. Installed under /usr/local/bin, ahead
of the real tools on root's and sudo's PATH, and removed after the run.
"""

from __future__ import annotations

import json

import yaml

from gpucluster_rack import ROOT
from gpucluster_rack.node import Node
from gpucluster_rack.playbook import Playbook, converge
from gpucluster_rack.rack import Rack

# The recorded outputs are test data: they stay with the parser tests that read them too.
SAMPLES = ROOT / "tests" / "accept" / "samples" / "healthy"
SHARE = "usr/local/share/gpucluster-healthy-probes"
NCCL_TEST = "opt/nccl-tests/build/all_reduce_perf"

# command → shell body (the sample files live in /SHARE).
_SCRIPTS = {
    "usr/local/bin/nvidia-smi": (
        'case "$*" in\n'
        f'  "-q -x") cat /{SHARE}/nvidia-smi-q-x.xml ;;\n'
        f'  "nvlink -s") cat /{SHARE}/nvidia-smi-nvlink-s.txt ;;\n'
        '  *) exec /usr/bin/nvidia-smi "$@" ;;\n'
        "esac\n"
    ),
    "usr/local/bin/dcgmi": f"cat /{SHARE}/dcgmi-diag-r2-j.json\n",
    "usr/local/bin/ibstat": f"cat /{SHARE}/ibstat.txt\n",
    "usr/local/bin/lsmod": f"cat /{SHARE}/lsmod.txt\n",
    "usr/local/bin/lspci": (
        f'if [ "$*" = "-vv -d 15b3:" ]; then cat /{SHARE}/lspci-vv-d-15b3.txt\n'
        'else exec /usr/bin/lspci "$@"; fi\n'
    ),
    # Under srun (the fabric gate) it is one MPI rank of many: rank 0 prints, as nccl-tests does.
    NCCL_TEST: (
        'if [ -n "${SLURM_PROCID:-}" ]; then\n'
        f'  if [ "$SLURM_PROCID" = 0 ]; then cat /{SHARE}/all_reduce_perf-2nodes.txt; fi\n'
        "  exit 0\n"
        "fi\n"
        f"cat /{SHARE}/all_reduce_perf.txt\n"
    ),
}


def install(node: Node) -> None:
    """Make the node's probes print the healthy samples (refuses to shadow a real nccl-tests build)."""
    root = node.root
    if (root / NCCL_TEST).exists():
        raise AssertionError(f"{node.name} has a real {NCCL_TEST}: the healthy probes would replace it")
    (root / SHARE).mkdir(parents=True, exist_ok=True)
    for sample in SAMPLES.iterdir():
        (root / SHARE / sample.name).write_bytes(sample.read_bytes())
    for path, body in _SCRIPTS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("#!/bin/sh\n" + body)
        (root / path).chmod(0o755)


def accept(rack: Rack, healthy: list[int], *extra: str) -> tuple[Playbook, dict[str, dict[str, object]]]:
    """Run accept.yml with the healthy samples on the nodes of the given indexes.

    Returns the run and the summary's node entries by host.
    """
    nodes = [rack.node(i) for i in healthy]
    for node in nodes:
        install(node)
    try:
        run = converge(rack, *extra, playbook="ansible/playbooks/accept.yml")
    finally:
        for node in nodes:
            remove(node)
    reports = ROOT / "build" / "accept" / yaml.safe_load(rack.cluster_file.read_text())["name"]
    summary = reports / "summary.json"
    hosts = json.loads(summary.read_text())["hosts"] if run.rc == 0 else []
    return run, {str(r["host"]): r for r in hosts}


def remove(node: Node) -> None:
    """Take the recorded outputs away again: the node's real (failing) probes answer."""
    root = node.root
    for path in _SCRIPTS:
        (root / path).unlink(missing_ok=True)
    for sample in SAMPLES.iterdir():
        (root / SHARE / sample.name).unlink(missing_ok=True)
    for directory in (root / SHARE, root / "opt/nccl-tests/build", root / "opt/nccl-tests"):
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
