"""An emulated S3 for the reference jobs: a moto server on loopback with one versioned bucket."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

BUCKET = "example-checkpoints"
PREFIX = "checkpoints/alice/42"


def contract_env(endpoint: str, run: int, interval_s: float) -> dict[str, str]:
    """A job's environment under the checkpoint contract, against the emulated S3, in its run `run`."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SLURM_"))},
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "GPUCLUSTER_CHECKPOINT_URI": f"s3://{BUCKET}/{PREFIX}/",
        "GPUCLUSTER_CHECKPOINT_INTERVAL_S": str(interval_s),
        "GPUCLUSTER_CHECKPOINT_SIGNAL": "USR1",
        "GPUCLUSTER_REQUEUE_EXIT": "99",
        "SLURM_RESTART_COUNT": str(run),
    }


def client(endpoint: str) -> Any:
    """An S3 client of the emulated account."""
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )


@contextmanager
def versioned_bucket() -> Iterator[str]:
    """Start moto from an empty account, create BUCKET with versioning on; yields the endpoint."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto's backends are per process, not per server: start each test from an empty account.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10)
    s3 = client(endpoint)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    try:
        yield endpoint
    finally:
        server.stop()


def read_json(endpoint: str, key: str) -> dict[str, Any]:
    """The JSON object at PREFIX/key."""
    body = client(endpoint).get_object(Bucket=BUCKET, Key=f"{PREFIX}/{key}")["Body"].read()
    data: dict[str, Any] = json.loads(body)
    return data


def wait_for_progress(endpoint: str, key: str, at_least: int) -> None:
    """Wait until the job's progress record at PREFIX/key says it reached step `at_least`."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if read_json(endpoint, key)["reached"] >= at_least:
                return
        except client(endpoint).exceptions.NoSuchKey:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{key} never reached step {at_least}")
