"""An apt caching proxy on host loopback, reachable only from inside the rack's bridge namespace."""

from __future__ import annotations

import socket
import subprocess
import time
import zlib
from pathlib import Path

from tests.rack.image import CACHE
from tests.rack.network import BRIDGE_ADDRESS, bridge_ns

APT_PORT = 3142  # where nodes reach the proxy, inside the rack's own network
BASE_PORT = 3150  # above apt-cacher-ng's default 3142, so a system instance cannot collide


def proxy_port(rack: str) -> int:
    """Host loopback port of a rack's proxy: one per rack name, so racks can run side by side."""
    return BASE_PORT + zlib.crc32(rack.encode()) % 400


# No Remap-* lines: the package's default remaps the Debian mirror to another backend, which
# answered 503 here and made `apt-get update` hang; without them requests go where sources point.
CONFIG = """CacheDir: {cache}
LogDir: {logs}
Port: {port}
BindAddress: 127.0.0.1
ForeGround: 1
SocketPath: {state}/acng.socket
PidFile: {state}/acng.pid
ExThreshold: 30
"""


def start_proxy(state: Path, rack: str) -> list[int]:
    """Start apt-cacher-ng and the two socat hops; return their PIDs."""
    conf = state / "acng"
    conf.mkdir(parents=True, exist_ok=True)
    # One cache per rack name: two apt-cacher-ng instances must not share a cache directory.
    cache, logs = CACHE / f"apt-cacher-ng-{rack}", state / "acng-log"
    cache.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    port = proxy_port(rack)
    (conf / "acng.conf").write_text(CONFIG.format(cache=cache, logs=logs, port=port, state=state))
    pids = [_spawn(["/usr/sbin/apt-cacher-ng", "-c", str(conf)], state / "acng.out")]
    _wait_for_port("127.0.0.1", port)
    sock = state / "apt.sock"
    pids.append(
        _spawn(
            ["socat", f"UNIX-LISTEN:{sock},fork,unlink-early", f"TCP:127.0.0.1:{port}"],
            state / "socat-host.out",
        )
    )
    _wait_for_path(sock)
    pids.append(
        _spawn(
            [
                "ip",
                "netns",
                "exec",
                bridge_ns(rack),
                "socat",
                f"TCP-LISTEN:{APT_PORT},bind={BRIDGE_ADDRESS},fork,reuseaddr",
                f"UNIX-CONNECT:{sock}",
            ],
            state / "socat-bridge.out",
        )
    )
    return pids


def apt_proxy_url() -> str:
    """The proxy as nodes see it."""
    return f"http://{BRIDGE_ADDRESS}:{APT_PORT}"


def _spawn(args: list[str], log: Path) -> int:
    with log.open("ab") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return process.pid


def _wait_for_port(host: str, port: int, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"apt-cacher-ng did not listen on {host}:{port}")


def _wait_for_path(path: Path, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear")
        time.sleep(0.1)
