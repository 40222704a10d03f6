"""Checkpoint stack intent: versioned, encrypted, TLS-only, logged, tiered, retained, protected."""

from __future__ import annotations

from aws_cdk.assertions import Match

from tests.stacks.conftest import Synth


def _bucket(synth: Synth) -> tuple[str, dict[str, object]]:
    found = synth.template("Checkpoints").find_resources(
        "AWS::S3::Bucket",
        {"Properties": {"Tags": Match.array_with([{"Key": "gpucluster:role", "Value": "checkpoints"}])}},
    )
    assert len(found) == 1, found.keys()
    return next(iter(found.items()))


def test_stack_is_termination_protected(example_synth: Synth) -> None:
    stacks = example_synth.stacks
    assert stacks.checkpoints is not None
    assert stacks.checkpoints.termination_protection is True


def test_bucket_is_versioned_kms_encrypted_private_and_retained(example_synth: Synth) -> None:
    logical_id, bucket = _bucket(example_synth)
    assert bucket["DeletionPolicy"] == "Retain"
    assert bucket["UpdateReplacePolicy"] == "Retain"
    props = bucket["Properties"]
    assert isinstance(props, dict)
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["BucketKeyEnabled"] is True
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    template = example_synth.template("Checkpoints")
    (logs_id,) = template.find_resources(
        "AWS::S3::Bucket", {"Properties": {"LoggingConfiguration": Match.absent()}}
    )
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    key_id = rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]["Fn::GetAtt"][0]
    template.has_resource(
        "AWS::KMS::Key", {"Properties": {"EnableKeyRotation": True}, "DeletionPolicy": "Retain"}
    )
    assert key_id in template.find_resources("AWS::KMS::Key")
    assert logical_id != logs_id


def test_bucket_policy_denies_requests_without_tls(example_synth: Synth) -> None:
    logical_id, _ = _bucket(example_synth)
    example_synth.template("Checkpoints").has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": logical_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Principal": {"AWS": "*"},
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_lifecycle_follows_the_cluster_file(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None and aws.checkpoint is not None
    spec = aws.checkpoint
    _, bucket = _bucket(example_synth)
    props = bucket["Properties"]
    assert isinstance(props, dict)
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["AbortIncompleteMultipartUpload"] == {
        "DaysAfterInitiation": spec.abort_incomplete_upload_days
    }
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": spec.noncurrent_version_days}
    assert [(t["StorageClass"], t["TransitionInDays"]) for t in rule["Transitions"]] == [
        (t.storage_class, t.after_days) for t in spec.tiers
    ]
    assert ("ExpirationInDays" in rule) == (spec.retention_days is not None)


def test_retention_days_expire_current_checkpoints(cloud_only_synth: Synth) -> None:
    aws = cloud_only_synth.cluster.aws
    assert aws is not None and aws.checkpoint is not None and aws.checkpoint.retention_days
    _, bucket = _bucket(cloud_only_synth)
    props = bucket["Properties"]
    assert isinstance(props, dict)
    assert props["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == aws.checkpoint.retention_days


def test_access_log_bucket_is_private_retained_and_tls_only(example_synth: Synth) -> None:
    template = example_synth.template("Checkpoints")
    logs = template.find_resources(
        "AWS::S3::Bucket", {"Properties": {"LoggingConfiguration": Match.absent()}}
    )
    assert len(logs) == 1
    ((logical_id, bucket),) = logs.items()
    assert bucket["DeletionPolicy"] == "Retain"
    assert bucket["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": logical_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            },
        },
    )


def test_sse_s3_when_the_file_asks_for_it(networked_synth: Synth) -> None:
    _, bucket = _bucket(networked_synth)
    props = bucket["Properties"]
    assert isinstance(props, dict)
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    networked_synth.template("Checkpoints").resource_count_is("AWS::KMS::Key", 0)
