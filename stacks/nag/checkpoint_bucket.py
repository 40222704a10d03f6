"""GpuCluster-CheckpointBucket: buckets are versioned, retained on delete and replace, and TLS-only."""

from __future__ import annotations

from collections.abc import Iterator

from stacks.nag.template import Finding, Json, Rule, Template, ref_target


def _denies_plain_http(statement: Json) -> bool:
    """Whether a policy statement denies every request made without TLS."""
    condition = statement.get("Condition", {}).get("Bool", {})
    return (
        statement.get("Effect") == "Deny"
        and statement.get("Principal") in ("*", {"AWS": "*"})
        and str(condition.get("aws:SecureTransport")).lower() == "false"
    )


def _tls_only(template: Template, bucket_id: str) -> bool:
    """Whether some bucket policy in the template denies non-TLS access to this bucket."""
    for _, policy in template.of_type("AWS::S3::BucketPolicy"):
        if ref_target(policy.get("Bucket")) == bucket_id:
            statements = policy.get("PolicyDocument", {}).get("Statement", [])
            if any(_denies_plain_http(s) for s in statements):
                return True
    return False


def check(template: Template) -> Iterator[Finding]:
    """Versioning enabled, DeletionPolicy and UpdateReplacePolicy Retain, a deny-non-TLS policy."""
    for bucket_id, props in template.of_type("AWS::S3::Bucket"):
        resource = template.resources[bucket_id]
        if props.get("VersioningConfiguration", {}).get("Status") != "Enabled":
            yield bucket_id, "versioning is not enabled"
        for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
            if resource.get(policy) != "Retain":
                yield bucket_id, f"{policy} is {resource.get(policy)!r}, not 'Retain'"
        if not _tls_only(template, bucket_id):
            yield bucket_id, "no bucket policy denies requests without TLS (aws:SecureTransport false)"


RULE = Rule(
    id="GpuCluster-CheckpointBucket",
    description="Checkpoint data survives mistakes: versioned, retained, and only reachable over TLS.",
    fix="Use the CheckpointBucket construct (versioned=True, RemovalPolicy.RETAIN, enforce_ssl=True).",
    check=check,
)
