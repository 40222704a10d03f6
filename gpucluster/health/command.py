"""The `gpucluster health` verb: read slurmctld's view of the nodes (or a saved copy) and print it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from gpucluster import exit_codes
from gpucluster.health.report import as_json, as_text, parse_nodes
from gpucluster.text_input import UnreadableInputError, read_text


def _scontrol_nodes() -> str | None:
    """`scontrol show node -o` on this host (the controller), or None after printing why it failed."""
    try:
        done = subprocess.run(
            ["scontrol", "show", "node", "-o"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"scontrol show node -o: {exc}; run on the controller, or pass --from FILE", file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"scontrol show node -o: {done.stderr.strip()}; pass --from FILE", file=sys.stderr)
        return None
    return done.stdout


def cmd_health(args: argparse.Namespace) -> int:
    """List every node's last health pass, drain reason and who drained it (docs/health.md)."""
    try:
        text = read_text(args.from_file) if args.from_file else _scontrol_nodes()
    except UnreadableInputError as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    if text is None:
        return exit_codes.BAD_INPUT
    nodes = parse_nodes(text)
    if not nodes:
        source = args.from_file or "scontrol show node -o"
        print(f"{source}: no NodeName= lines; save `scontrol show node -o` output", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(as_json(nodes) if args.format == "json" else as_text(nodes))
    return exit_codes.OK


def add_verbs(verbs: Any) -> None:
    """Add `health` to the CLI's sub-commands."""
    sub = verbs.add_parser("health", help=(cmd_health.__doc__ or "").splitlines()[0])
    sub.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="saved `scontrol show node -o` output ('-' for stdin) instead of asking slurmctld here",
    )
    sub.add_argument("--format", choices=["text", "json"], default="text")
    sub.set_defaults(func=cmd_health)
