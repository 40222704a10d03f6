"""Exit statuses of every `gpucluster` verb, in one place so scripts and CI can rely on them."""

from __future__ import annotations

from typing import Final

# The verb did its work. `accept` exits OK whether or not nodes passed: its report says which.
OK: Final = 0
# Input that cannot be used: a cluster file, an argument, a report or a sacct file. The message on
# stderr names the file and what to change; never a traceback. (argparse also exits 2 on bad usage.)
BAD_INPUT: Final = 2
# `review --fail-on KIND`: the reviewed change contains a change of that kind.
FAIL_ON: Final = 3
