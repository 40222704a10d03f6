"""Job credentials on a cloud node: each job user gets S3 access to its own checkpoint prefix, nothing more.

Only root may reach the metadata service (the instance role's credentials would hand a job the munge
key), so a job's S3 client asks this broker instead, through AWS's `credential_process` (the job's
AWS_CONFIG_FILE names `gpucluster-job-credentials`). The broker (root, a unix socket) learns the caller's
uid from the kernel (SO_PEERCRED), refuses root and system users, and assumes the checkpoint writer role
with a session policy confined to `<prefix>/<user>/`. boto3 refreshes before the hour runs out.
https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-sourcing-external.html
"""

from __future__ import annotations

import json
import pwd
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOCKET = "/run/gpucluster/job-credentials.sock"
DEFAULT_CONFIG = Path("/etc/gpucluster/job-credentials.json")
FIRST_JOB_UID = 1000  # below: system accounts, which run no jobs
NOBODY_UID = 65534
SESSION_S = 3600  # the most a chained role session may last
RENEW_BEFORE_S = 600
# What a job may do to checkpoint objects; the writer role (stacks/parts/checkpoint_writer.py) grants it.
OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)


@dataclass(frozen=True, kw_only=True)
class BrokerConfig:
    """What the join writes to /etc/gpucluster/job-credentials.json from the checkpoint-access parameter."""

    node: str
    role_arn: str
    bucket_arn: str
    prefix: str
    region: str
    endpoint_url: str | None = None  # an emulated AWS (tests); None: AWS itself
    socket: str = SOCKET

    @classmethod
    def load(cls, path: Path = DEFAULT_CONFIG) -> BrokerConfig:
        """Read the configuration file."""
        return cls(**json.loads(path.read_text()))


def session_policy(cfg: BrokerConfig, user: str) -> dict[str, Any]:
    """The user's own prefix of the checkpoint bucket (the role's policy bounds it further)."""
    own = f"{cfg.prefix}/{user}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": list(OBJECT_ACTIONS), "Resource": f"{cfg.bucket_arn}/{own}/*"},
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": cfg.bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": [own, f"{own}/*"]}},
            },
            # The role allows the bucket's key only through S3; the session keeps that.
            {"Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": "*"},
        ],
    }


class RefusedError(Exception):
    """The caller gets no credentials (root, a system user, an unknown uid)."""


class Broker:
    """Assumes the checkpoint writer role per user, caching each session until shortly before it ends."""

    def __init__(
        self,
        cfg: BrokerConfig,
        sts: Any,
        *,
        clock: Callable[[], float] = time.time,
        user_of: Callable[[int], str] = lambda uid: pwd.getpwuid(uid).pw_name,
    ) -> None:
        self.cfg, self.sts, self.clock, self.user_of = cfg, sts, clock, user_of
        self._cache: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def credentials(self, uid: int) -> dict[str, Any]:
        """The credential_process answer (Version 1) for the user with this uid."""
        if uid < FIRST_JOB_UID or uid == NOBODY_UID:
            raise RefusedError(f"uid {uid} is not a job user")
        try:
            user = self.user_of(uid)
        except KeyError as error:
            raise RefusedError(f"uid {uid} has no account") from error
        with self._lock:
            cached = self._cache.get(user)
            if cached is None or cached["expires"] - RENEW_BEFORE_S <= self.clock():
                cached = self._assume(user)
                self._cache[user] = cached
            answer: dict[str, Any] = cached["answer"]
            return answer

    def _assume(self, user: str) -> dict[str, Any]:
        answer = self.sts.assume_role(
            RoleArn=self.cfg.role_arn,
            RoleSessionName=f"{user}@{self.cfg.node}"[:64],
            Policy=json.dumps(session_policy(self.cfg, user)),
            DurationSeconds=SESSION_S,
        )["Credentials"]
        expiration = answer["Expiration"]
        return {
            "expires": expiration.timestamp(),
            "answer": {
                "Version": 1,
                "AccessKeyId": answer["AccessKeyId"],
                "SecretAccessKey": answer["SecretAccessKey"],
                "SessionToken": answer["SessionToken"],
                "Expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, broker: Broker, log: Callable[[str], None]) -> None:
        self.broker, self.log = broker, log
        super().__init__(path, _Handler)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        """Answer one caller with its credentials or a refusal, both as one JSON line."""
        pid, uid, _ = struct.unpack("3i", self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        try:
            reply: dict[str, Any] = self.server.broker.credentials(uid)
        except RefusedError as error:
            self.server.log(f"refused pid {pid} uid {uid}: {error}")
            reply = {"error": str(error)}
        except Exception as error:  # STS unreachable or refusing: the caller retries, the broker lives on
            self.server.log(f"uid {uid}: {type(error).__name__}: {error}")
            reply = {"error": f"no credentials now: {type(error).__name__}"}
        self.request.sendall(json.dumps(reply).encode() + b"\n")


def serve(broker: Broker, log: Callable[[str], None] = print) -> _Server:
    """Bind the socket (every local user may connect; the broker decides by uid) and serve in a thread."""
    path = Path(broker.cfg.socket)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    server = _Server(str(path), broker, log)
    path.chmod(0o666)
    threading.Thread(target=server.serve_forever, name="job-credentials", daemon=True).start()
    return server


def fetch(path: str = SOCKET, timeout_s: float = 30.0) -> dict[str, Any]:
    """Ask the broker (what `gpucluster-job-credentials` prints)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout_s)
        client.connect(path)
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
    reply: dict[str, Any] = json.loads(data)
    return reply


def client_main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-job-credentials: the credential_process of a job's AWS configuration."""
    args = sys.argv[1:] if argv is None else argv
    try:
        reply = fetch(args[0] if args else SOCKET)
    except (OSError, ValueError) as error:
        print(f"gpucluster-job-credentials: broker unreachable: {error}", file=sys.stderr)
        return 1
    if "error" in reply:
        print(f"gpucluster-job-credentials: {reply['error']}", file=sys.stderr)
        return 1
    print(json.dumps(reply))
    return 0


def broker_main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-job-credentials-broker [CONFIG] (root, a systemd service)."""
    # Only the broker needs boto3 (the node image's python3-boto3); the client, which every job's S3
    # client runs, stays on the standard library and starts fast.
    import boto3  # noqa: PLC0415

    args = sys.argv[1:] if argv is None else argv
    cfg = BrokerConfig.load(Path(args[0]) if args else DEFAULT_CONFIG)
    sts = boto3.client("sts", region_name=cfg.region, endpoint_url=cfg.endpoint_url)
    server = serve(Broker(cfg, sts), log=lambda line: print(line, flush=True))
    print(f"job credentials for {cfg.node} on {cfg.socket}", flush=True)
    try:
        threading.Event().wait()
    finally:
        server.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`serve [CONFIG]` runs the broker; anything else is the client (the node image runs this file)."""
    args = sys.argv[1:] if argv is None else argv
    return broker_main(args[1:]) if args[:1] == ["serve"] else client_main(args)


if __name__ == "__main__":
    sys.exit(main())
