"""The cluster file as every verb reads it: loaded and checked once, warnings on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from gpucluster.clusterfile import Loaded, load


def load_cluster_file(path: str | Path) -> Loaded:
    """Load a verb's cluster file and print its warnings to stderr; ClusterFileError exits 2 in the CLI.

    Warnings go to stderr so that a verb's stdout (JSON for `cost --format json` and `accept evaluate`)
    stays machine-readable.
    """
    loaded = load(path)
    for warning in loaded.warnings:
        print(warning, file=sys.stderr)
    return loaded
