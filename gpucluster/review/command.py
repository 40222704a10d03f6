"""The `review` verb: argument checks, the review, output, and the --fail-on exit status."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucluster import exit_codes
from gpucluster.review.engine import Review, review
from gpucluster.review.errors import ReviewError
from gpucluster.review.findings import FAIL_ON
from gpucluster.review.report import as_json, as_markdown


def add_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `gpucluster review` on the CLI's sub-command parser."""
    sub = verbs.add_parser(
        "review", help="what a change does to the cloud, the racks, the bill and the risks"
    )
    sub.add_argument("--base", required=True, help="base revision, e.g. origin/main")
    sub.add_argument("--head", help="head revision (default: the work tree)")
    sub.add_argument("--cluster", help="review only this cluster file (default: every one that differs)")
    sub.add_argument("--format", choices=("markdown", "json"), default="markdown")
    sub.add_argument(
        "--fail-on", nargs="+", choices=sorted(FAIL_ON), default=[], metavar="KIND",
        help="exit 3 when a change of this kind is present: " + ", ".join(sorted(FAIL_ON)),
    )  # fmt: skip
    sub.add_argument("--out", help="write the report to this file instead of stdout")
    sub.set_defaults(func=cmd_review)


def cmd_review(args: argparse.Namespace) -> int:
    """Review --head (or the work tree) against --base; exit 3 when a --fail-on kind is present."""
    try:
        result = review(Path.cwd(), args.base, args.head, cluster=args.cluster)
    except ReviewError as exc:
        print(f"gpucluster review: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    text = as_json(result) if args.format == "json" else as_markdown(result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return exit_status(result, args.fail_on)


def exit_status(result: Review, fail_on: list[str]) -> int:
    """3 when any kind named by --fail-on is present, else 0."""
    present = result.kinds()
    hit = [name for name in fail_on if present & set(FAIL_ON[name])]
    if hit:
        print(f"gpucluster review: --fail-on {' '.join(hit)}: such changes are present", file=sys.stderr)
        return exit_codes.FAIL_ON
    return exit_codes.OK
