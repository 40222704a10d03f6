"""`gpucluster accept evaluate|skip|summarize`: one node's report against its profile, then the rack summary.

Exit status 0 whether nodes passed or not (the report says); 2 for input that cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpucluster import exit_codes
from gpucluster.accept.admission import admission
from gpucluster.accept.checks import run_checks
from gpucluster.accept.command_fabric import add_fabric_plan_verb, fabric_finding
from gpucluster.accept.declared import declared_for
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.observations import load_observations
from gpucluster.accept.report import (
    SUMMARY_JSON,
    SUMMARY_MD,
    node_report,
    read_reports,
    skipped_report,
    summary,
    summary_markdown,
)
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import Cluster


def add_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `gpucluster accept evaluate|summarize` on the CLI's sub-command parser."""
    accept = verbs.add_parser(
        "accept",
        help="rack acceptance: `evaluate` one node's observations, `summarize` the node reports",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    steps = accept.add_subparsers(
        dest="accept_verb", required=True, metavar="{evaluate,skip,fabric-plan,summarize}"
    )
    evaluate = steps.add_parser("evaluate", help="check one node's observations against its profile")
    evaluate.add_argument("--cluster", required=True, type=Path, help="cluster file")
    evaluate.add_argument("--host", required=True, help="node name as in the cluster file")
    evaluate.add_argument("--observations", required=True, type=Path, help="observations JSON")
    evaluate.add_argument("--out", required=True, type=Path, help="directory for HOST.json")
    evaluate.add_argument("--slurm-state", default="", help="the node's Slurm state (sinfo %%T)")
    evaluate.add_argument("--slurm-reason", default="", help="the node's Slurm reason (sinfo %%E)")
    evaluate.add_argument("--fabric", type=Path, help="the fabric test's runs (judges nccl_multi_node)")
    evaluate.set_defaults(func=cmd_evaluate)
    skip = steps.add_parser("skip", help="record a node that was not probed, and why")
    skip.add_argument("--cluster", required=True, type=Path, help="cluster file")
    skip.add_argument("--host", required=True, help="node name as in the cluster file")
    skip.add_argument("--why", required=True, help="why it was not probed (e.g. the jobs it runs)")
    skip.add_argument("--out", required=True, type=Path, help="directory for HOST.json")
    skip.set_defaults(func=cmd_skip)
    add_fabric_plan_verb(steps)
    summarize = steps.add_parser("summarize", help="summarize the node reports of a directory")
    summarize.add_argument("--reports", required=True, type=Path, help="directory of node reports")
    summarize.set_defaults(func=cmd_summarize)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Write OUT/HOST.json and print the one-line verdict the acceptance playbook reads."""
    cluster = load_cluster_file(args.cluster).cluster
    try:
        verdict = evaluate(
            cluster,
            args.host,
            args.observations,
            args.out,
            state=args.slurm_state,
            reason=args.slurm_reason,
            fabric=args.fabric,
        )
    except AcceptInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(json.dumps(verdict))
    return exit_codes.OK


def cmd_skip(args: argparse.Namespace) -> int:
    """Write OUT/HOST.json for a node left unprobed (it runs jobs): no verdict, nothing changes in Slurm."""
    cluster = load_cluster_file(args.cluster).cluster
    try:
        _write(args.out, args.host, skipped_report(declared_for(cluster, args.host), args.why))
    except AcceptInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(json.dumps({"host": args.host, "skipped": args.why}))
    return exit_codes.OK


def cmd_summarize(args: argparse.Namespace) -> int:
    """Write REPORTS/summary.json and summary.md and print the Markdown."""
    try:
        markdown = summarize(args.reports)
    except AcceptInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(markdown, end="")
    return exit_codes.OK


def evaluate(
    cluster: Cluster,
    host: str,
    observations_file: Path,
    out: Path,
    *,
    state: str = "",
    reason: str = "",
    fabric: Path | None = None,
) -> dict[str, object]:
    """Write OUT/HOST.json; return {host, passed, drain_reason}, plus the admission given a Slurm state.

    The admission (gpucluster.accept.admission) adds {action: resume|drain|keep|none, why, reason}.
    `fabric`: the fabric test's runs file, whose finding for the host judges nccl_multi_node.
    """
    declared = declared_for(cluster, host)
    finding = fabric_finding(cluster, host, fabric) if fabric else None
    report = node_report(declared, run_checks(declared, load_observations(observations_file), finding))
    line: dict[str, object] = {
        "host": host,
        "passed": report["passed"],
        "drain_reason": report["drain_reason"],
    }
    if state:
        decided = admission(bool(report["passed"]), report["drain_reason"], state, reason)
        report["admission"] = decided.why
        line.update(action=decided.action, why=decided.why, reason=decided.reason)
    _write(out, host, report)
    return line


def _write(out: Path, host: str, report: dict[str, object]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{host}.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise AcceptInputError(f"{out}: cannot write the report: {exc.strerror}") from None


def summarize(directory: Path) -> str:
    """Write DIR/summary.json and DIR/summary.md; return the Markdown."""
    data = summary(read_reports(directory))
    markdown = summary_markdown(data)
    try:
        (directory / SUMMARY_JSON).write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (directory / SUMMARY_MD).write_text(markdown, encoding="utf-8")
    except OSError as exc:
        raise AcceptInputError(f"{directory}: cannot write the summary: {exc.strerror}") from None
    return markdown
