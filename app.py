"""CDK entry point: load the cluster file named by context `cluster`, build the stacks. Wiring only."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from gpucluster import exit_codes
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import DEFAULT_CLUSTER_FILE, ClusterFileError, Loaded

if TYPE_CHECKING:
    import aws_cdk as cdk


def _load(cluster_file: str) -> Loaded:
    try:
        return load_cluster_file(cluster_file)
    except ClusterFileError as exc:
        print(exc, file=sys.stderr)
        sys.exit(exit_codes.BAD_INPUT)


def main(app: cdk.App | None = None) -> None:
    """Synthesize the cloud side of the cluster file given as `-c cluster=FILE` (into `app` if given)."""
    loaded: Loaded | None = None
    if app is None:
        # The CDK CLI hands the app its whole context (cdk.json's and -c) in CDK_CONTEXT_JSON, which is
        # what cdk.App reads too: a bad file is refused before aws_cdk starts its Node.js runtime (seconds).
        context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
        loaded = _load(context.get("cluster") or DEFAULT_CLUSTER_FILE)
    import aws_cdk as cdk  # noqa: PLC0415  (after the check above, see there)

    from stacks.cluster_app import add_checks, build  # noqa: PLC0415

    app = app or cdk.App()
    cluster_file = app.node.try_get_context("cluster") or DEFAULT_CLUSTER_FILE
    loaded = loaded or _load(cluster_file)
    build(app, loaded.cluster, source=str(cluster_file))
    add_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
