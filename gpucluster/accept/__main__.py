"""`python -m gpucluster.accept evaluate|summarize`: node reports and the rack summary.

Exit status 0 whether nodes passed or not (the report says); 2 for input that cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpucluster.accept.checks import run_checks
from gpucluster.accept.declared import declared_for
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.observations import load_observations
from gpucluster.accept.report import (
    SUMMARY_JSON,
    SUMMARY_MD,
    node_report,
    read_reports,
    summary,
    summary_markdown,
)
from gpucluster.clusterfile import ClusterFileError, load

BAD_INPUT_EXIT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gpucluster.accept", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    evaluate = sub.add_parser("evaluate", help="check one node's observations against its profile")
    evaluate.add_argument("--cluster", required=True, type=Path, help="cluster file")
    evaluate.add_argument("--host", required=True, help="node name as in the cluster file")
    evaluate.add_argument("--observations", required=True, type=Path, help="observations JSON")
    evaluate.add_argument("--out", required=True, type=Path, help="directory for HOST.json")
    summarize = sub.add_parser("summarize", help="summarize the node reports of a directory")
    summarize.add_argument("--reports", required=True, type=Path, help="directory of node reports")
    return parser


def evaluate(cluster_file: Path, host: str, observations_file: Path, out: Path) -> dict[str, object]:
    """Write OUT/HOST.json and return the one-line result {host, passed, drain_reason}."""
    try:
        cluster = load(cluster_file).cluster
    except ClusterFileError as exc:
        raise AcceptInputError(str(exc)) from None
    declared = declared_for(cluster, host)
    report = node_report(declared, run_checks(declared, load_observations(observations_file)))
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{host}.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise AcceptInputError(f"{out}: cannot write the report: {exc.strerror}") from None
    return {"host": host, "passed": report["passed"], "drain_reason": report["drain_reason"]}


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


def main(argv: list[str] | None = None) -> int:
    """Run the acceptance CLI; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "evaluate":
            print(json.dumps(evaluate(args.cluster, args.host, args.observations, args.out)))
        else:
            print(summarize(args.reports), end="")
    except AcceptInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
