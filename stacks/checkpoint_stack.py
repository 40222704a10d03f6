"""Checkpoint stack: the stateful part, termination-protected and retained."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from constructs import Construct

from gpucluster.clusterfile.model.aws import CheckpointBucket as CheckpointSpec
from gpucluster.names import checkpoint_key_alias
from stacks.parts.checkpoint_bucket import CheckpointBucket
from stacks.parts.encryption_key import EncryptionKey
from stacks.parts.log_bucket import AccessLogBucket


@dataclass(frozen=True)
class CheckpointExports:
    """Export names other stacks import (explicit, so the capacity stack can be replaced freely)."""

    bucket_arn: str
    key_arn: str | None
    prefix: str


class CheckpointStack(cdk.Stack):
    """Checkpoint bucket, its KMS key (unless SSE-S3 is asked for) and its access-log bucket."""

    def __init__(
        self, scope: Construct, id_: str, *, cluster_name: str, spec: CheckpointSpec, **kwargs: Any
    ) -> None:
        super().__init__(scope, id_, termination_protection=True, **kwargs)
        self.key: kms.IKey | None = None
        if spec.encryption == "kms":
            self.key = EncryptionKey(
                self, "Key", alias=checkpoint_key_alias(cluster_name), description="Checkpoints"
            ).key
        self.access_logs = AccessLogBucket(self, "AccessLogs").bucket
        self.checkpoints = CheckpointBucket(
            self, "Checkpoints", spec=spec, access_logs=self.access_logs, key=self.key
        )
        self.exports = CheckpointExports(
            bucket_arn=self._export("BucketArn", self.checkpoints.bucket.bucket_arn),
            key_arn=self._export("KeyArn", self.key.key_arn) if self.key else None,
            prefix=spec.prefix,
        )

    def _export(self, id_: str, value: str) -> str:
        """Export a value under `<stack name>-<id>` and return the export name."""
        name = f"{self.stack_name}-{id_}"
        cdk.CfnOutput(self, id_, value=value, export_name=name)
        return name
