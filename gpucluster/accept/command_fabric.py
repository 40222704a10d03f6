"""`gpucluster accept fabric-plan`, and the fabric finding that `evaluate --fabric FILE` judges."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpucluster import exit_codes
from gpucluster.accept.declared import declared_for
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.fabric import analyse, judge, load_fabric
from gpucluster.accept.fabric_finding import Finding
from gpucluster.accept.fabric_plan import Launch, left_out, plan_runs
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import Cluster


def add_fabric_plan_verb(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `gpucluster accept fabric-plan` on the accept verbs."""
    plan = steps.add_parser("fabric-plan", help="the srun runs of the fabric test across candidate nodes")
    plan.add_argument("--cluster", required=True, type=Path, help="cluster file")
    plan.add_argument("--hosts", default="", help="comma-separated candidate nodes (may be empty)")
    plan.add_argument("--reservation", required=True, help="the Slurm reservation the runs use")
    plan.add_argument("--all-reduce-perf", required=True, help="path of the MPI build of all_reduce_perf")
    plan.set_defaults(func=cmd_fabric_plan)


def fabric_plan(cluster: Cluster, hosts: list[str], launch: Launch) -> dict[str, object]:
    """{hosts: the nodes tested, left_out: {host: why}, runs: [{name, hosts, argv}]}."""
    declared = [declared_for(cluster, h) for h in hosts]
    excluded = {d.host: why for d in declared if (why := left_out(d))}
    tested = [d for d in declared if d.host not in excluded]
    return {
        "hosts": [d.host for d in tested],
        "left_out": excluded,
        "runs": [run.to_json() for run in plan_runs(tested, launch)],
    }


def cmd_fabric_plan(args: argparse.Namespace) -> int:
    """Print the plan as one JSON line for the acceptance playbook."""
    cluster = load_cluster_file(args.cluster).cluster
    launch = Launch(reservation=args.reservation, all_reduce_perf=args.all_reduce_perf)
    try:
        plan = fabric_plan(cluster, [h for h in args.hosts.split(",") if h], launch)
    except AcceptInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(json.dumps(plan))
    return exit_codes.OK


def fabric_finding(cluster: Cluster, host: str, path: Path) -> Finding | None:
    """What the recorded fabric runs say of `host`; None when it was not tested."""
    hosts, runs = load_fabric(path)
    if host not in hosts:
        return None
    threshold = {h: declared_for(cluster, h).min_multi_node_busbw_gbs for h in hosts}
    verdicts = [judge(run, min(threshold[h] or 0.0 for h in run.hosts)) for run in runs]
    return analyse(hosts, verdicts)[host]
