"""`make demo`'s burst part: a rack whose slurmctld bursts a 2-node job to emulated cloud nodes.

The rack converges against an emulated AWS (tests/rack/burst_rack.py), a user's job runs on two cloud
nodes the ResumeProgram launched, and after the idle time the nodes power down and their instances end.
"""

from __future__ import annotations

import json
import sys
import time

from tests.rack.burst_rack import IDLE_S, USER, Burst, burst_rack
from tests.rack.sh import progress

DEMO_RACK = "demoburst"


def _ctl(burst: Burst, command: str) -> str:
    return burst.rack.ssh("ctl", command, timeout=600)


def main() -> int:
    """Burst one job, show the nodes at each step, wait for them to power down."""
    with burst_rack(DEMO_RACK) as burst:
        if burst.first.rc != 0:
            print(burst.first.output[-4000:], file=sys.stderr)
            return 1
        print(_ctl(burst, "sinfo"))
        command = "sbatch --parsable -W -p cloud -N2 -o /tmp/demo-%j.out --wrap 'srun hostname'"
        print(f"$ su - {USER} -c {json.dumps(command)}   # -W: waits for the job")
        started = time.monotonic()
        job = _ctl(burst, f"su - {USER} -c {json.dumps(command)}").strip()
        progress(f"job {job} ran on two cloud nodes, {time.monotonic() - started:.0f} s from submit to done")
        print(_ctl(burst, f"scontrol show job {job} | grep -E 'JobState|NodeList=|RunTime'"))
        print(_ctl(burst, "sinfo"))
        progress(f"waiting for the idle nodes to power down (idle time {IDLE_S} s)")
        for _ in range(90):
            states = _ctl(burst, "sinfo -h -p cloud -o %t").split()
            if states == ["idle~"]:
                break
            time.sleep(3)
        print(_ctl(burst, "sinfo"))
        print(f"instances still running: {len(burst.runner.running)}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
