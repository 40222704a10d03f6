"""Publish the controller's munge key to its SSM SecureString: the one source cloud nodes read at boot."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from gpucluster.names import munge_key_parameter
from gpucluster.power.resume import clients, load_config

if TYPE_CHECKING:
    from types_boto3_ssm import SSMClient

KEY_FILE = Path("/etc/munge/munge.key")
DEFAULT_KEY = "alias/aws/ssm"  # SSM's AWS-managed key
# Missing, or encrypted under a key this role may no longer use.
REWRITE_ON = {"ParameterNotFound", "InvalidKeyId", "AccessDeniedException", "KMSAccessDeniedException"}


def publish(ssm: SSMClient, name: str, key: bytes, kms_key_id: str | None) -> bool:
    """Write the key (base64) unless the parameter holds it under the same KMS key; True when written.

    A parameter under another key (the capacity stack was replaced, or the key was aws/ssm) or one that
    no longer decrypts is rewritten: nodes can decrypt only with the stack's current key.
    """
    value = base64.b64encode(key).decode()
    if _current(ssm, name) == (value, kms_key_id or DEFAULT_KEY):
        return False
    ssm.put_parameter(
        Name=name,
        Value=value,
        Type="SecureString",
        Overwrite=True,
        Description="munge key of the Slurm cluster (published by the controller role)",
        KeyId=kms_key_id or DEFAULT_KEY,
    )
    return True


def _current(ssm: SSMClient, name: str) -> tuple[str, str] | None:
    """The parameter's value and KMS key id; None when it is missing or no longer decrypts."""
    latest = None
    try:
        # The history is the one read that carries the KeyId and allows a per-parameter grant.
        for page in ssm.get_paginator("get_parameter_history").paginate(Name=name, WithDecryption=True):
            latest = page["Parameters"][-1] if page["Parameters"] else latest
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in REWRITE_ON:
            return None
        raise
    return (latest.get("Value", ""), latest.get("KeyId", "")) if latest else None


def main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-publish-munge-key [KEYFILE]: prints `published` or `unchanged`."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("usage: gpucluster-publish-munge-key [KEYFILE]", file=sys.stderr)
        return 2
    cfg = load_config()
    _, ssm = clients(cfg)
    key = Path(args[0] if args else KEY_FILE).read_bytes()
    written = publish(ssm, munge_key_parameter(cfg.cluster), key, cfg.munge_key_kms_key)
    print("published" if written else "unchanged")
    return 0
