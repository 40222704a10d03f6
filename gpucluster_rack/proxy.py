"""An apt caching proxy on host loopback, reachable only from inside the rack's bridge namespace."""

from __future__ import annotations

import socket
import subprocess
import time
import zlib
from pathlib import Path

from gpucluster_rack.image import CACHE
from gpucluster_rack.network import BRIDGE_ADDRESS, bridge_ns

APT_PORT = 3142  # where nodes reach the proxy, inside the rack's own network
BASE_PORT = 3150  # above apt-cacher-ng's default 3142, so a system instance cannot collide


def proxy_port(rack: str) -> int:
    """Host loopback port of a rack's proxy: one per rack name, so racks can run side by side."""
    return BASE_PORT + zlib.crc32(rack.encode()) % 400


# No Remap-* lines: the package's default remaps the Debian mirror to another backend, which
# answered 503 here and made `apt-get update` hang; without them requests go where sources point.
# FreshIndexMaxAge: a rack's nodes see one set of package indexes for 10 minutes, not one re-checked
# upstream every 27 s (the default). On a 16-node rack's first converge an apt-get update hung for minutes
# three times in two runs, each time right after the proxy had fetched an InRelease again (apt's http
# method idle on a connection the proxy had closed); fewer refreshes mean fewer such moments.
CONFIG = """CacheDir: {cache}
LogDir: {logs}
Port: {port}
BindAddress: 127.0.0.1
ForeGround: 1
SocketPath: {state}/acng.socket
PidFile: {state}/acng.pid
ExThreshold: 30
FreshIndexMaxAge: 600
"""


def start_proxy(state: Path, rack: str) -> list[int]:
    """Start apt-cacher-ng and the two socat hops; return their PIDs."""
    pid, port = start_cache(state, rack)
    return [pid, *bridge_hop(state, rack, "apt", port, APT_PORT)]


def start_cache(state: Path, name: str) -> tuple[int, int]:
    """Start apt-cacher-ng on host loopback with the cache of `name`; return its PID and port."""
    conf = state / "acng"
    conf.mkdir(parents=True, exist_ok=True)
    # One cache per rack name: two apt-cacher-ng instances must not share a cache directory.
    cache, logs = CACHE / f"apt-cacher-ng-{name}", state / "acng-log"
    cache.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    port = proxy_port(name)
    (conf / "acng.conf").write_text(CONFIG.format(cache=cache, logs=logs, port=port, state=state))
    pid = spawn(["/usr/sbin/apt-cacher-ng", "-c", str(conf)], state / "acng.out")
    wait_for_port("127.0.0.1", port)
    return pid, port


def bridge_hop(state: Path, rack: str, name: str, host_port: int, bridge_port: int) -> list[int]:
    """Make a host loopback port reachable at BRIDGE_ADDRESS:bridge_port inside the rack network.

    Two socat processes through a unix socket: the host namespace has no route into the rack's.
    """
    sock = state / f"{name}.sock"
    pids = [
        spawn(
            ["socat", f"UNIX-LISTEN:{sock},fork,unlink-early", f"TCP:127.0.0.1:{host_port}"],
            state / f"socat-{name}-host.out",
        )
    ]
    wait_for_path(sock)
    return [*pids, bridge_listener(state, rack, name, sock, bridge_port)]


def bridge_listener(state: Path, rack: str, name: str, sock: Path, bridge_port: int) -> int:
    """A socat in the bridge namespace from BRIDGE_ADDRESS:bridge_port to a host unix socket; its PID."""
    return spawn(
        [
            "ip",
            "netns",
            "exec",
            bridge_ns(rack),
            "socat",
            f"TCP-LISTEN:{bridge_port},bind={BRIDGE_ADDRESS},fork,reuseaddr",
            f"UNIX-CONNECT:{sock}",
        ],
        state / f"socat-{name}-bridge.out",
    )


def apt_proxy_url() -> str:
    """The proxy as nodes see it."""
    return f"http://{BRIDGE_ADDRESS}:{APT_PORT}"


def spawn(args: list[str], log: Path) -> int:
    """Start a long-running helper in its own session, output to log; return its PID."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return process.pid


def wait_for_port(host: str, port: int, timeout_s: float = 20) -> None:
    """Block until host:port accepts connections."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")


def wait_for_path(path: Path, timeout_s: float = 10) -> None:
    """Block until path exists."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear")
        time.sleep(0.1)
