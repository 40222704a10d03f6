"""The S3 server-access-log bucket: SSE-S3 (the only encryption log delivery supports), retained."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from stacks.checkov_skips import checkov_skip
from stacks.parts.acks import acknowledge

LOG_RETENTION_DAYS = 365


class AccessLogBucket(Construct):
    """Private, versioned, TLS-only bucket that receives the checkpoint bucket's access logs."""

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-logs",
                    expiration=cdk.Duration.days(LOG_RETENTION_DAYS),
                    noncurrent_version_expiration=cdk.Duration.days(30),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(7),
                )
            ],
        )
        cfn = self.bucket.node.default_child
        assert isinstance(cfn, s3.CfnBucket)
        no_loop = "This is the access-log destination; logging it into itself would loop."
        acknowledge(
            self.bucket,
            {
                "AwsSolutions::AwsSolutions-S1": no_loop,
                "NIST.800.53.R5::NIST.800.53.R5-S3BucketLoggingEnabled": no_loop,
                "NIST.800.53.R5::NIST.800.53.R5-S3DefaultEncryptionKMS": (
                    "S3 server access log delivery supports only SSE-S3 on the destination bucket."
                ),
                "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled": (
                    "Access logs are kept one year in-region; cross-region copies are a site decision."
                ),
            },
        )
        cfn.add_metadata("checkov", checkov_skip("CKV_AWS_18", no_loop))
