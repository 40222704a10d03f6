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


def publish(ssm: SSMClient, name: str, key: bytes, kms_key_id: str | None) -> bool:
    """Write the key (base64) unless the parameter already holds it; True when it was written."""
    value = base64.b64encode(key).decode()
    try:
        current = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"].get("Value")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ParameterNotFound":
            raise
        current = None
    if current == value:
        return False
    description = "munge key of the Slurm cluster (published by the controller role)"
    if kms_key_id:
        ssm.put_parameter(
            Name=name,
            Value=value,
            Type="SecureString",
            Overwrite=True,
            Description=description,
            KeyId=kms_key_id,
        )
    else:
        ssm.put_parameter(
            Name=name, Value=value, Type="SecureString", Overwrite=True, Description=description
        )
    return True


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
