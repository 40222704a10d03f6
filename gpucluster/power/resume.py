"""ResumeProgram: launch the cloud nodes slurmctld resumes, one instant EC2 Fleet call per job and group.

slurmctld calls it with the hostlist to resume and, from 22.05 on, SLURM_RESUME_FILE: JSON naming each
job's nodes (https://slurm.schedmd.com/power_save.html). A job's nodes in one group launch all or
nothing; nodes no job asked for launch together per group. It returns once EC2 answered: the nodes
boot, read their names from their tags and register on their own. A group without capacity (or at a
limit) gets its nodes set DOWN with the EC2 error as the reason, and is skipped for a while, so a job
that allows another partition or group runs there.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from gpucluster.clusterfile.hostlist import expand
from gpucluster.names import MAX_COUNT_REFUSAL, POWER_REASON
from gpucluster.power import capacity, config, fleet
from gpucluster.power.log import log
from gpucluster.power.resume_marks import ResumeMarks
from gpucluster.power.slurm import Scontrol, Slurm
from gpucluster.power.unavailable import Unavailable

if TYPE_CHECKING:
    from types_boto3_ec2 import EC2Client
    from types_boto3_sqs import SQSClient
    from types_boto3_ssm import SSMClient

# Retries are ours (throttling only): botocore's would retry other errors too.
NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=20)


@dataclass(frozen=True)
class Request:
    """Nodes to launch together (one job's, or the rest), and the job that asked (None: no job)."""

    nodes: tuple[str, ...]
    job: int | None = None


def requests(hostlist: str, resume_file: str | None) -> list[Request]:
    """One request per job in SLURM_RESUME_FILE, then one for the nodes no job named."""
    wanted = expand(hostlist)
    found: list[Request] = []
    claimed: set[str] = set()
    if resume_file:
        data = json.loads(Path(resume_file).read_text())
        for job in data.get("jobs", []):
            nodes = tuple(n for n in expand(job.get("nodes_resume", "")) if n in wanted and n not in claimed)
            if nodes:
                found.append(Request(nodes, int(job["job_id"])))
                claimed.update(nodes)
    rest = tuple(n for n in wanted if n not in claimed)
    return [*found, *([Request(rest)] if rest else [])]


def resume(
    cfg: config.PowerConfig,
    wanted: list[Request],
    *,
    ec2: EC2Client,
    ssm: SSMClient,
    slurm: Slurm,
    now: float | None = None,
) -> list[fleet.Launch]:
    """Launch every request, group by group; nodes that cannot launch are set DOWN with the reason."""
    now = time.time() if now is None else now
    deployed = capacity.read(ssm, cfg.capacity_parameter)
    unavailable = Unavailable(cfg.state_dir)
    ResumeMarks(cfg.state_dir).mark([n for request in wanted for n in request.nodes], now)
    launches: list[fleet.Launch] = []
    for request in wanted:
        # One launch per group and name prefix: a mixed group's GPU models launch apart, each as its types.
        by_names: dict[tuple[str, str], list[str]] = {}
        for node in request.nodes:
            group = cfg.group_of(node)
            if group is None:
                slurm.set_down([node], f"{POWER_REASON}not a cloud node of this cluster")
                continue
            by_names.setdefault((group.name, group.prefix_of(node) or group.name), []).append(node)
        for (name, prefix), nodes in by_names.items():
            group = next(g for g in cfg.groups if g.name == name)
            until = unavailable.until(prefix, now)
            if until is not None:
                launch = fleet.Launch(
                    name,
                    nodes,
                    error=f"group unavailable until {time.strftime('%H:%M:%S', time.gmtime(until))} UTC",
                )
            elif name not in deployed:
                launch = fleet.Launch(name, nodes, error=f"group not deployed ({cfg.capacity_parameter})")
            elif (refusal := _past_max_count(ec2, cfg, group, nodes, launches)) is not None:
                launch = fleet.Launch(name, nodes, error=refusal)
            else:
                launch = fleet.launch(ec2, cfg, group, deployed[name], nodes)
                if launch.error is not None:
                    unavailable.mark(prefix, now + cfg.unavailable_seconds)
            if launch.error is not None:
                slurm.set_down(nodes, f"{POWER_REASON}{launch.error}"[:200])
            launches.append(launch)
    return launches


def _past_max_count(
    ec2: EC2Client,
    cfg: config.PowerConfig,
    group: config.GroupConfig,
    nodes: list[str],
    earlier: list[fleet.Launch],
) -> str | None:
    """Why launching nodes would pass a mixed group's max_count, or None when it would not.

    Each GPU model of a mixed group has max_count names, so Slurm alone could run the group past its
    cap; the group's live instances (and this call's earlier launches, which EC2 may not list yet)
    count against it.
    """
    if not group.models:
        return None
    live = {i.id for i in fleet.describe(ec2, cfg, group=group.name) if i.live and i.node not in nodes}
    live |= {i for launch in earlier if launch.group == group.name for i in launch.instances.values()}
    if len(live) + len(nodes) <= group.max_count:
        return None
    return f"{MAX_COUNT_REFUSAL} {group.max_count}: {len(live)} running, {len(nodes)} more asked"


def clients(cfg: config.PowerConfig) -> tuple[EC2Client, SSMClient]:
    """boto3 clients in the cluster's region, at the configured endpoint (an emulator in tests)."""
    if "AWS_CONFIG_FILE" not in os.environ and Path(cfg.aws_config_file).is_file():
        os.environ["AWS_CONFIG_FILE"] = cfg.aws_config_file
    session = boto3.session.Session(region_name=cfg.region)
    ec2 = session.client("ec2", endpoint_url=cfg.endpoint_url, config=NO_RETRIES)
    ssm = session.client("ssm", endpoint_url=cfg.endpoint_url, config=NO_RETRIES)
    return ec2, ssm


def sqs_client(cfg: config.PowerConfig) -> SQSClient:
    """An SQS client like `clients`' (call those first: they pick the AWS configuration file)."""
    session = boto3.session.Session(region_name=cfg.region)
    return session.client("sqs", endpoint_url=cfg.endpoint_url, config=NO_RETRIES)


def load_config() -> config.PowerConfig:
    """GPUCLUSTER_POWER_CONFIG's file, else /etc/gpucluster/power.json."""
    return config.load(Path(os.environ.get("GPUCLUSTER_POWER_CONFIG", str(config.DEFAULT_PATH))))


def program_arguments(program: str, argv: list[str] | None) -> tuple[config.PowerConfig, str] | None:
    """The configuration and slurmctld's one HOSTLIST argument; None (after a usage line) if wrong."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: {program} HOSTLIST", file=sys.stderr)
        return None
    return load_config(), args[0]


def main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-resume HOSTLIST (slurmctld's ResumeProgram)."""
    arguments = program_arguments("gpucluster-resume", argv)
    if arguments is None:
        return 2
    cfg, hostlist = arguments
    log(cfg.state_dir, "gpucluster-resume", f"start {hostlist}")
    ec2, ssm = clients(cfg)
    launches = resume(
        cfg, requests(hostlist, os.environ.get("SLURM_RESUME_FILE")), ec2=ec2, ssm=ssm, slurm=Scontrol()
    )
    for launch in launches:
        outcome = launch.error or " ".join(f"{n}={i}" for n, i in sorted(launch.instances.items()))
        print(f"{launch.group}: {outcome}")
        log(cfg.state_dir, "gpucluster-resume", f"{launch.group}: {outcome}")
    log(cfg.state_dir, "gpucluster-resume", f"done {hostlist}")
    return 0
