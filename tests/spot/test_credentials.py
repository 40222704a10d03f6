"""Job credentials: the broker assumes the writer role per job user, confined to the user's own prefix.

STS is moto's (in process); callers are real processes under other uids (setpriv), so the uid the broker
acts on is the kernel's SO_PEERCRED, not anything the caller says.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpucluster.spot.credentials import Broker, BrokerConfig, RefusedError, serve, session_policy
from tests.conftest import ROOT

JOB_UID = 2001
BUCKET_ARN = "arn:aws:s3:::example-checkpoints"


class RecordingSts:
    """moto's STS, recording each AssumeRole request."""

    def __init__(self, sts: Any) -> None:
        self.sts = sts
        self.requests: list[dict[str, Any]] = []

    def assume_role(self, **request: Any) -> Any:
        self.requests.append(request)
        return self.sts.assume_role(**request)


@pytest.fixture
def sts(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingSts]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield RecordingSts(boto3.client("sts", region_name="us-east-1"))


def _cfg(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig(
        node="p5-spot-1",
        role_arn="arn:aws:iam::123456789012:role/checkpoint-writer",
        bucket_arn=BUCKET_ARN,
        prefix="checkpoints",
        region="us-east-1",
        socket=str(tmp_path / "broker" / "job-credentials.sock"),
    )


def test_the_session_is_confined_to_the_users_own_prefix(sts: RecordingSts, tmp_path: Path) -> None:
    broker = Broker(_cfg(tmp_path), sts, user_of={JOB_UID: "alice"}.__getitem__)
    answer = broker.credentials(JOB_UID)
    assert answer["Version"] == 1 and answer["AccessKeyId"] and answer["SessionToken"]
    (request,) = sts.requests
    assert request["RoleSessionName"] == "alice@p5-spot-1" and request["DurationSeconds"] == 3600
    policy = json.loads(request["Policy"])
    objects, listing, _ = policy["Statement"]
    assert objects["Resource"] == f"{BUCKET_ARN}/checkpoints/alice/*"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["checkpoints/alice", "checkpoints/alice/*"]}}
    assert policy == session_policy(_cfg(tmp_path), "alice")


def test_a_session_is_reused_until_shortly_before_it_ends(sts: RecordingSts, tmp_path: Path) -> None:
    now = [datetime.now(UTC).timestamp()]
    broker = Broker(_cfg(tmp_path), sts, clock=lambda: now[0], user_of={JOB_UID: "alice"}.__getitem__)
    first = broker.credentials(JOB_UID)
    assert broker.credentials(JOB_UID) == first and len(sts.requests) == 1
    now[0] += timedelta(minutes=55).total_seconds()  # within ten minutes of the end: renewed
    broker.credentials(JOB_UID)
    assert len(sts.requests) == 2


def test_root_system_users_and_nobody_are_refused(sts: RecordingSts, tmp_path: Path) -> None:
    broker = Broker(_cfg(tmp_path), sts)
    for uid in (0, 105, 65534):
        with pytest.raises(RefusedError):
            broker.credentials(uid)
    assert sts.requests == []


def _client(socket_path: str, uid: int) -> subprocess.CompletedProcess[str]:
    """The client as AWS's credential_process runs it, under another uid: the file as the node image
    installs it, run by the system Python (the checkout and its venv may be root's alone)."""
    setpriv = shutil.which("setpriv")
    assert setpriv, "util-linux setpriv"
    script = Path(socket_path).parent.parent / "job_credentials.py"
    shutil.copyfile(ROOT / "gpucluster" / "spot" / "credentials.py", script)
    script.chmod(0o644)
    return subprocess.run(
        [
            setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            os.path.realpath(sys.executable),
            str(script),
            socket_path,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_over_the_socket_the_kernel_names_the_caller(sts: RecordingSts) -> None:
    # pytest's tmp_path is root's alone; other uids must reach the socket, as on a node (/run/gpucluster).
    with tempfile.TemporaryDirectory(dir="/tmp") as shared:
        Path(shared).chmod(0o755)
        _over_the_socket(sts, _cfg(Path(shared)))


def _over_the_socket(sts: RecordingSts, cfg: BrokerConfig) -> None:
    logged: list[str] = []
    server = serve(Broker(cfg, sts, user_of={JOB_UID: "alice"}.__getitem__), log=logged.append)
    try:
        job = _client(cfg.socket, JOB_UID)
        assert job.returncode == 0, job.stderr
        answer = json.loads(job.stdout)
        assert answer["Version"] == 1 and answer["Expiration"].endswith("Z")
        assert sts.requests[-1]["RoleSessionName"] == "alice@p5-spot-1"
        nobody = _client(cfg.socket, 65534)
        assert nobody.returncode == 1 and "uid 65534 is not a job user" in nobody.stderr
        assert len(sts.requests) == 1
        assert any("refused" in line and "uid 65534" in line for line in logged)
    finally:
        server.shutdown()
        server.server_close()
