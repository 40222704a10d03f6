"""The `gpucluster` command: a cluster file from validation and rendering to cost, review and acceptance.

Exit status: 0 done; 2 input that cannot be used (the message names the file and what to change);
3 `review --fail-on` found such a change.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from gpucluster import exit_codes
from gpucluster.accept.command import add_verbs as add_accept_verbs
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import DEFAULT_CLUSTER_FILE, Cluster, ClusterFileError
from gpucluster.cost.commands import add_verbs as add_cost_verbs
from gpucluster.health.command import add_verbs as add_health_verbs
from gpucluster.render import RenderError
from gpucluster.render.output import write_tree
from gpucluster.review.command import add_verbs as add_review_verbs
from gpucluster.routing.commands import add_verbs as add_routing_verbs
from gpucluster.show import summary


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a cluster file; warnings go to stderr and still exit 0."""
    loaded = load_cluster_file(args.file)
    print(f"{args.file}: ok ({len(loaded.warnings)} warning(s))")
    return exit_codes.OK


def cmd_render(args: argparse.Namespace) -> int:
    """Render every node file of the cluster into a directory, atomically."""
    loaded = load_cluster_file(args.file)
    written = write_tree(loaded.cluster, args.out, source=args.file)
    print(f"rendered {written} files into {args.out}")
    return exit_codes.OK


def cmd_show(args: argparse.Namespace) -> int:
    """Print a human summary: sites, nodes, GPUs, capacity."""
    print(summary(load_cluster_file(args.file)))
    return exit_codes.OK


def cmd_schema(_: argparse.Namespace) -> int:
    """Print the JSON Schema (Draft 2020-12) of the cluster file."""
    print(json.dumps(cluster_schema(), indent=2, sort_keys=True))
    return exit_codes.OK


def cluster_schema() -> dict[str, object]:
    """JSON Schema of the cluster file for editors and CI."""
    schema = Cluster.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gpucluster.dev/schema/cluster-v1.json",
        **schema,
    }


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per verb."""
    parser = argparse.ArgumentParser(
        prog="gpucluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    commands: list[tuple[str, Callable[[argparse.Namespace], int], bool]] = [
        ("validate", cmd_validate, True),
        ("render", cmd_render, True),
        ("show", cmd_show, True),
        ("schema", cmd_schema, False),
    ]
    for name, func, takes_file in commands:
        sub = verbs.add_parser(name, help=(func.__doc__ or "").splitlines()[0])
        if takes_file:
            sub.add_argument(
                "file",
                nargs="?",
                default=DEFAULT_CLUSTER_FILE,
                help=f"cluster file (default {DEFAULT_CLUSTER_FILE})",
            )
        if name == "render":
            sub.add_argument("--out", required=True, help="directory to write (replaced atomically)")
        sub.set_defaults(func=func)
    add_cost_verbs(verbs, DEFAULT_CLUSTER_FILE)
    add_review_verbs(verbs)
    add_accept_verbs(verbs)
    add_routing_verbs(verbs, DEFAULT_CLUSTER_FILE)
    add_health_verbs(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; bad input exits 2 with file:line: path: problem; hint."""
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except ClusterFileError as exc:
        print(exc, file=sys.stderr)
        return exit_codes.BAD_INPUT
    except RenderError as exc:
        print(f"{getattr(args, 'file', '')}: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    return result


if __name__ == "__main__":
    sys.exit(main())
