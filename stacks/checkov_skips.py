"""The checkov checks we skip, each with its reason: the one documented place for checkov exceptions.

Resource-specific exceptions live on the resource instead (CloudFormation `Metadata.checkov.skip`,
see stacks/parts/log_bucket.py), so they cannot hide the same problem elsewhere.
"""

from __future__ import annotations

from typing import Final

_CDK_PROVIDER = (
    "Applies only to the Lambda function CDK generates to strip the rules of the VPC's default security "
    "group (@aws-cdk/aws-ec2:restrictDefaultSecurityGroup); it runs once per deployment, outside the data "
    "path. tests/stacks/test_linters.py fails if any other Lambda function appears in our templates."
)

SKIPS: Final[dict[str, str]] = {
    "CKV_AWS_115": f"Lambda concurrency limit. {_CDK_PROVIDER}",
    "CKV_AWS_116": f"Lambda dead-letter queue. {_CDK_PROVIDER}",
    "CKV_AWS_117": f"Lambda inside a VPC. {_CDK_PROVIDER}",
}


def skip_check_argument() -> str:
    """The value for `checkov --skip-check`."""
    return ",".join(sorted(SKIPS))


def checkov_skip(check_id: str, comment: str) -> dict[str, list[dict[str, str]]]:
    """CloudFormation resource metadata that makes checkov skip one check on that resource only."""
    return {"skip": [{"id": check_id, "comment": comment}]}
