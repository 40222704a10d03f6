"""`make demo`'s rack part: boot a small local rack, converge it, run a 2-node job, tear down."""

from __future__ import annotations

import sys
import time

from tests.rack.conftest import converge
from tests.rack.rack import Rack, down
from tests.rack.sh import progress


def main() -> int:
    """Print progress for each long step and end with the job's output from two rack nodes."""
    rack = Rack(name="demo", size=3)
    try:
        rack.up()
        progress("converging the rack with ansible/site.yml (first run installs packages: a few minutes)")
        started = time.monotonic()
        run = converge(rack)
        if run.rc != 0:
            print(run.output[-4000:], file=sys.stderr)
            return 1
        progress(f"converged in {time.monotonic() - started:.0f} s; waiting for both compute nodes")
        for _ in range(60):
            if rack.ssh("ctl", "sinfo -h -t idle -o %D").strip() == "2":
                break
            time.sleep(1)
        print(rack.ssh("ctl", "sinfo"))
        print("$ srun -N2 --gres=gpu:1 bash -c 'echo $(hostname): GPU $CUDA_VISIBLE_DEVICES'")
        print(rack.ssh("ctl", "srun -N2 --gres=gpu:1 bash -c 'echo $(hostname): GPU $CUDA_VISIBLE_DEVICES'"))
        return 0
    finally:
        progress("tearing the rack down")
        down(rack.name)


if __name__ == "__main__":
    sys.exit(main())
