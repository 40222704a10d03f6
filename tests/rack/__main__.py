"""`python -m tests.rack up [N]` / `down`: the Makefile's rack-up and rack-down."""

from __future__ import annotations

import sys

from tests.rack.rack import Rack, down


def main(argv: list[str]) -> int:
    """Boot or tear down the rack named `t`."""
    if argv[:1] == ["up"]:
        rack = Rack(size=int(argv[1]) if len(argv) > 1 else 4)
        rack.up()
        print(f"rack up: cluster file {rack.cluster_file}, ssh config {rack.ssh_config}")
        print(f"inside its network: ip netns exec gcr-{rack.name}-br ssh -F {rack.ssh_config} ctl")
        return 0
    if argv[:1] == ["down"]:
        down()
        return 0
    print("usage: python -m tests.rack up [N] | down", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
