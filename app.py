"""CDK entry point: load the cluster file named by context `cluster`, build the stacks. Wiring only."""

from __future__ import annotations

import sys

import aws_cdk as cdk

from gpucluster import exit_codes
from gpucluster.cluster_input import load_cluster_file
from gpucluster.clusterfile import DEFAULT_CLUSTER_FILE, ClusterFileError
from stacks.cluster_app import add_checks, build


def main(app: cdk.App | None = None) -> None:
    """Synthesize the cloud side of the cluster file given as `-c cluster=FILE` (into `app` if given)."""
    app = app or cdk.App()
    cluster_file = app.node.try_get_context("cluster") or DEFAULT_CLUSTER_FILE
    try:
        loaded = load_cluster_file(cluster_file)
    except ClusterFileError as exc:
        print(exc, file=sys.stderr)
        sys.exit(exit_codes.BAD_INPUT)
    build(app, loaded.cluster, source=str(cluster_file))
    add_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
