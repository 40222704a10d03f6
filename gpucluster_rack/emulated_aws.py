"""An emulated AWS for a test rack: a pinned moto server on host loopback, reachable inside the rack network.

The product's programs reach it at ENDPOINT (an endpoint from their configuration, as they would reach
AWS) through a fault injector, which forwards every request to moto and answers CreateFleet for a
launch template a test marked as failing with EC2's own capacity error (moto has none). The test harness
reaches moto directly on host loopback. moto's gaps are in ../shared/notes/cloud-node-facts.md.
"""

from __future__ import annotations

import http.client
import socketserver
import threading
import uuid
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import boto3

from gpucluster_rack import ROOT
from gpucluster_rack.network import BRIDGE_ADDRESS
from gpucluster_rack.proxy import bridge_listener, spawn, wait_for_port

MOTO_PORT = 5000  # inside the rack network
ENDPOINT = f"http://{BRIDGE_ADDRESS}:{MOTO_PORT}"
REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
MOTO_SERVER = ROOT / ".venv/bin/moto_server"
# An instant fleet reports capacity it could not launch in its error set, with HTTP 200:
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleet.html
FLEET_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>{request}</requestId>
  <fleetId>fleet-{fleet}</fleetId>
  <errorSet><item><lifecycle>{lifecycle}</lifecycle><errorCode>{code}</errorCode><errorMessage>{message}</errorMessage></item></errorSet>
  <fleetInstanceSet/>
</CreateFleetResponse>
"""


def host_port(rack: str) -> int:
    """The host loopback port of a rack's moto server: one per rack name, so racks can run side by side."""
    return 5200 + zlib.crc32(rack.encode()) % 300


class FaultInjector(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The host end of the hop into the rack network: moto, or a capacity error where a test wants one."""

    daemon_threads = True

    def __init__(self, path: Path, moto_port: int) -> None:
        self.moto_port = moto_port
        self.failing: dict[str, tuple[str, str]] = {}  # launch template id → (error code, message)
        self.fleet_calls: list[dict[str, list[str]]] = []
        path.unlink(missing_ok=True)
        super().__init__(str(path), _Forward)
        threading.Thread(target=self.serve_forever, name="moto-fault-injector", daemon=True).start()

    def fail_launches(self, launch_template_id: str, code: str, message: str) -> None:
        """CreateFleet with this launch template answers `code` and launches nothing."""
        self.failing[launch_template_id] = (code, message)

    def heal(self) -> None:
        """Every launch reaches moto again."""
        self.failing.clear()


class _Forward(BaseHTTPRequestHandler):
    server: FaultInjector

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def address_string(self) -> str:
        """Unix sockets have no peer address."""
        return "rack"

    def do_GET(self) -> None:
        """Forward as is."""
        self._forward(b"")

    def do_HEAD(self) -> None:
        """Forward as is (S3 HeadObject)."""
        self._forward(b"")

    def do_PUT(self) -> None:
        """Forward with the body (S3 PutObject from the nodes' jobs)."""
        self._forward(self._body())

    def do_DELETE(self) -> None:
        """Forward as is."""
        self._forward(self._body())

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return data
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_POST(self) -> None:
        """CreateFleet may be answered here; everything else is forwarded."""
        body = self._body()
        form = parse_qs(body.decode(errors="replace"))
        if form.get("Action") == ["CreateFleet"]:
            self.server.fleet_calls.append(form)
            template = form.get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId", [""])[
                0
            ]
            if template in self.server.failing:
                code, message = self.server.failing[template]
                lifecycle = form.get("TargetCapacitySpecification.DefaultTargetCapacityType", ["on-demand"])[
                    0
                ]
                ids = {"request": uuid.uuid4(), "fleet": uuid.uuid4().hex[:17]}
                text = FLEET_ERROR.format(**ids, lifecycle=lifecycle, code=code, message=message)
                self._reply(200, text.encode(), "text/xml")
                return
        self._forward(body)

    def _forward(self, body: bytes) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.moto_port, timeout=60)
        skip = ("connection", "host", "transfer-encoding", "content-length")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        connection.request(self.command, self.path, body=body or None, headers=headers)
        answer = connection.getresponse()
        # S3 answers in its headers (ETag, version id, Last-Modified, an object's length on HEAD).
        extra = [
            (k, v)
            for k, v in answer.getheaders()
            if k.lower() not in (*skip, "content-type", "server", "date")
        ]
        length = answer.getheader("Content-Length") if self.command == "HEAD" else None
        self._reply(answer.status, answer.read(), answer.getheader("Content-Type", "text/xml"), extra, length)
        connection.close()

    def _reply(
        self,
        status: int,
        data: bytes,
        content_type: str,
        extra: list[tuple[str, str]] | None = None,
        length: str | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in extra or []:
            self.send_header(name, value)
        self.send_header("Content-Length", length or str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def start(state: Path, rack: str) -> tuple[list[int], FaultInjector]:
    """Start moto and its hop into the rack network; the PIDs (the rack's teardown ends them)."""
    port = host_port(rack)
    moto = spawn([str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)], state / "moto.out")
    wait_for_port("127.0.0.1", port, timeout_s=60)
    injector = FaultInjector(state / "moto.sock", port)
    return [moto, bridge_listener(state, rack, "moto", state / "moto.sock", MOTO_PORT)], injector


def client(rack: str, service: str) -> Any:
    """A boto3 client of the emulated account, from the host."""
    # boto3-stubs types a client per literal service name; this one is chosen by the caller at run time.
    return boto3.client(  # type: ignore[call-overload]
        service, region_name=REGION, endpoint_url=f"http://127.0.0.1:{host_port(rack)}", **CREDENTIALS
    )
