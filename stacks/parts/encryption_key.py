"""A customer-managed KMS key with rotation, retained so data it protects stays readable."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from constructs import Construct


class EncryptionKey(Construct):
    """Symmetric KMS key with yearly rotation; RETAIN by default: deleting it would orphan the data."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        alias: str | None,
        description: str,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, id_)
        self.key = kms.Key(
            self,
            "Key",
            alias=alias,
            description=description,
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
