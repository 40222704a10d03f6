"""`python -m gpucluster_rack up [N]` / `down`: the Makefile's rack-up and rack-down.

`up` leaves a small keeper process behind as the parent of the nodes' nspawn processes, so they are
reaped when they end (PID 1 of some machines never reaps orphans); `down` asks the keeper to tear
the rack down, or tears down directly what a dead keeper left.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from gpucluster_rack.rack import STATE_ROOT, Rack, _alive, down

KEEPER = STATE_ROOT / "keeper.pid"
USAGE = "usage: python -m gpucluster_rack up [N] | down  (boot N nodes, default 4, as root; tear down)"


def _keep(rack: Rack, ready_fd: int) -> None:
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    try:
        rack.up()
        KEEPER.write_text(str(os.getpid()))
        os.write(ready_fd, b"ok")
    except BaseException as exc:
        os.write(ready_fd, f"failed: {exc}".encode())
        down(rack.name)
        raise
    finally:
        os.close(ready_fd)
    while not stop:
        time.sleep(0.5)
    down(rack.name)
    KEEPER.unlink(missing_ok=True)


def _detach_output(rack: Rack) -> None:
    """Point the keeper's stdio at a log file, so a caller's pipe sees EOF when `up` returns."""
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    log = os.open(STATE_ROOT / f"keeper-{rack.name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)


def up(size: int) -> int:
    """Boot the rack in a keeper process and return once every node answers SSH."""
    rack = Rack(size=size)
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.setsid()
        os.close(read_fd)
        _detach_output(rack)
        try:
            _keep(rack, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    answer = os.read(read_fd, 4096).decode()
    if answer != "ok":
        print(f"rack up {answer or 'failed'}", file=sys.stderr)
        return 1
    print(f"rack up: cluster file {rack.cluster_file}, ssh config {rack.ssh_config}")
    print(f"inside its network: ip netns exec gcr-{rack.name}-br ssh -F {rack.ssh_config} ctl")
    return 0


def down_all() -> int:
    """Stop the keeper (it tears its rack down), then clear every rack state left behind."""
    if KEEPER.exists():
        pid = int(KEEPER.read_text())
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
            while _alive(pid):
                time.sleep(0.2)
        KEEPER.unlink(missing_ok=True)
    for state in sorted(STATE_ROOT.glob("*")) if STATE_ROOT.exists() else []:
        if state.is_dir():
            down(state.name)
    return 0


def main(argv: list[str]) -> int:
    """Dispatch `up [N]`, `down` and `--help`."""
    if argv[:1] == ["up"]:
        down_all()
        return up(int(argv[1]) if len(argv) > 1 else 4)
    if argv[:1] == ["down"]:
        return down_all()
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
