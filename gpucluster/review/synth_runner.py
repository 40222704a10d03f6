"""Run one tree's app.py for several (tree, out dir) pairs in one process: one jsii runtime start.

`python synth_runner.py CODE_TREE CONTEXT_JSON TREE OUTDIR [TREE OUTDIR ...]`. Only for trees whose
synth inputs other than the cluster file are identical to CODE_TREE's, so CODE_TREE's code stands for
all of them; each pair runs with its tree as working directory, so its own cluster file is read.
Prints a JSON list of the out dirs whose synth failed; exit status 3 when the app cannot be driven
this way (the caller then runs the app once per tree).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import sys

import aws_cdk as cdk


def main(argv: list[str]) -> int:
    """Synthesize every pair; report the failed out dirs on stdout."""
    code_tree, context_json, *pairs = argv
    sys.path[0] = code_tree  # the tree's app and packages, not this script's directory
    tree_app = importlib.import_module("app")

    if "app" not in inspect.signature(tree_app.main).parameters:
        return 3
    context = json.loads(context_json)
    failed: list[str] = []
    for tree, outdir in zip(pairs[::2], pairs[1::2], strict=True):
        os.chdir(tree)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                tree_app.main(cdk.App(outdir=outdir, context=context))
        except (Exception, SystemExit) as exc:  # the caller re-runs a failed pair alone for its output
            print(f"{outdir}: {exc}", file=sys.stderr)
            failed.append(outdir)
    print(json.dumps(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
