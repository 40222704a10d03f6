"""The power programs' log: one line per decision, in the state directory (slurmctld keeps no output).

`<UTC time with ms> <program>: <message>`, appended; operators read it next to slurmctld.log, and
bench/burst.py reads the resume program's start and end from it.
"""

from __future__ import annotations

import time
from pathlib import Path

LOG_NAME = "power.log"


def log(state_dir: str, program: str, message: str) -> None:
    """Append one line; a log that cannot be written never stops a program."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
    try:
        with (Path(state_dir) / LOG_NAME).open("a") as out:
            out.write(f"{stamp} {program}: {message}\n")
    except OSError:
        pass
