"""SuspendProgram and ResumeFailProgram: terminate the instances of the named cloud nodes, by their tags."""

from __future__ import annotations

import time

from gpucluster.clusterfile.hostlist import expand
from gpucluster.power import fleet
from gpucluster.power.log import log
from gpucluster.power.resume import clients, program_arguments
from gpucluster.power.resume_marks import ResumeMarks


def main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-suspend HOSTLIST (also the ResumeFailProgram)."""
    arguments = program_arguments("gpucluster-suspend", argv)
    if arguments is None:
        return 2
    cfg, hostlist = arguments
    ec2, _ = clients(cfg)
    nodes = [node for node in expand(hostlist) if cfg.group_of(node) is not None]
    ResumeMarks(cfg.state_dir).mark_suspended(nodes, time.time())
    terminated = fleet.terminate(ec2, cfg, nodes)
    line = f"terminated {len(terminated)} instance(s) of {len(nodes)} node(s): {' '.join(terminated)}"
    print(line)
    log(cfg.state_dir, "gpucluster-suspend", f"{hostlist}: {line}")
    return 0
