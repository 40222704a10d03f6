"""`python -m gpucluster.accept ARGS`: an alias of `gpucluster accept ARGS`, kept for old scripts."""

import sys

from gpucluster.cli import main

sys.exit(main(["accept", *sys.argv[1:]]))
