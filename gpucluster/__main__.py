"""`python -m gpucluster` runs the CLI."""

import sys

from gpucluster.cli import main

sys.exit(main())
