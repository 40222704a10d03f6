"""An instance metadata service for emulated cloud nodes: IMDSv2 only, one unix socket per instance.

Each instance's network namespace gets 169.254.169.254 on its loopback and a socat from there to its own
socket here, so the service knows which instance asks without trusting anything the node sends. It
answers what the product reads: the instance id, instance tags (live from the emulated EC2, as the
launch template's InstanceMetadataTags allows), the role's credentials, the spot instance-action and the
rebalance recommendation (set by a test). Requests without a session token get 401, as with
`HttpTokens: required`. https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
"""

from __future__ import annotations

import json
import secrets
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROLE = "gpucluster-node"
TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"


@dataclass
class InstanceMetadata:
    """What one instance's metadata says beyond EC2's own record."""

    instance_id: str
    availability_zone: str
    spot_action: dict[str, str] | None = None
    rebalance: dict[str, str] | None = None
    tokens: dict[str, float] = field(default_factory=dict)  # token → expiry (epoch seconds)
    requests: list[tuple[str, str, int]] = field(default_factory=list)  # method, path, status


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, path: str, metadata: InstanceMetadata, ec2: Any) -> None:
        self.metadata = metadata
        self.ec2 = ec2
        super().__init__(path, _Handler)


class LoopbackServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The same service on 127.0.0.1 (unit tests of code that reads the metadata service)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, metadata: InstanceMetadata, ec2: Any = None) -> None:
        self.metadata = metadata
        self.ec2 = ec2
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        """Base URL, as the agent's imds_url."""
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server | LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads `requests` instead."""

    def address_string(self) -> str:
        """Unix sockets have no peer address."""
        return "instance"

    def do_PUT(self) -> None:
        """PUT /latest/api/token: a session token for the asked TTL (1 to 21600 s)."""
        ttl = self.headers.get(TTL_HEADER, "")
        if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self._answer(400, "")
            return
        token = secrets.token_urlsafe(32)
        self.server.metadata.tokens[token] = time.time() + int(ttl)
        self._answer(200, token)

    def do_GET(self) -> None:
        """GET with a valid token: the metadata path's value, else 401 (no token) or 404."""
        metadata = self.server.metadata
        if metadata.tokens.get(self.headers.get(TOKEN_HEADER, ""), 0) < time.time():
            self._answer(401, "")
            return
        value = self._value(self.path.rstrip("/") if self.path != "/" else self.path)
        self._answer(200, value) if value is not None else self._answer(404, "")

    def _value(self, path: str) -> str | None:
        metadata = self.server.metadata
        meta = "/latest/meta-data"
        tags = self._tags() if path.startswith(f"{meta}/tags/instance") else {}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 6 * 3600))
        credentials = {
            "Code": "Success",
            "Type": "AWS-HMAC",
            "AccessKeyId": "testing",
            "SecretAccessKey": "testing",
            "Token": "testing",
            "Expiration": now,
        }
        document = {
            "instanceId": metadata.instance_id,
            "availabilityZone": metadata.availability_zone,
            "region": metadata.availability_zone[:-1],
        }
        values: dict[str, str | None] = {
            f"{meta}/instance-id": metadata.instance_id,
            f"{meta}/placement/availability-zone": metadata.availability_zone,
            f"{meta}/placement/region": metadata.availability_zone[:-1],
            f"{meta}/tags/instance": "\n".join(sorted(tags)),
            f"{meta}/iam/security-credentials": ROLE,
            f"{meta}/iam/security-credentials/{ROLE}": json.dumps(credentials),
            f"{meta}/spot/instance-action": json.dumps(metadata.spot_action)
            if metadata.spot_action
            else None,
            f"{meta}/events/recommendations/rebalance": (
                json.dumps(metadata.rebalance) if metadata.rebalance else None
            ),
            "/latest/dynamic/instance-identity/document": json.dumps(document),
        }
        if path.startswith(f"{meta}/tags/instance/"):
            return tags.get(path.removeprefix(f"{meta}/tags/instance/"))
        return values.get(path)

    def _tags(self) -> dict[str, str]:
        described = self.server.ec2.describe_tags(
            Filters=[{"Name": "resource-id", "Values": [self.server.metadata.instance_id]}]
        )
        return {tag["Key"]: tag["Value"] for tag in described["Tags"]}

    def _answer(self, status: int, body: str) -> None:
        self.server.metadata.requests.append((self.command, self.path, status))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class MetadataService:
    """Per-instance metadata servers on unix sockets under state_dir."""

    def __init__(self, state_dir: Path, ec2: Any) -> None:
        self.state_dir = state_dir
        self.ec2 = ec2
        self.instances: dict[str, InstanceMetadata] = {}
        self._servers: dict[str, _Server] = {}
        state_dir.mkdir(parents=True, exist_ok=True)

    def serve(self, instance_id: str, availability_zone: str) -> Path:
        """Start answering for one instance; returns the socket its socat connects to."""
        path = self.state_dir / f"{instance_id}.sock"
        path.unlink(missing_ok=True)
        metadata = InstanceMetadata(instance_id, availability_zone)
        server = _Server(str(path), metadata, self.ec2)
        threading.Thread(target=server.serve_forever, name=f"imds-{instance_id}", daemon=True).start()
        self.instances[instance_id] = metadata
        self._servers[instance_id] = server
        return path

    def stop(self, instance_id: str) -> None:
        """Stop answering for an instance (it terminated)."""
        server = self._servers.pop(instance_id, None)
        if server is not None:
            server.shutdown()
            server.server_close()
            (self.state_dir / f"{instance_id}.sock").unlink(missing_ok=True)

    def close(self) -> None:
        """Stop every server."""
        for instance_id in list(self._servers):
            self.stop(instance_id)
