"""Acknowledge validation findings on a construct, each with the reason a reviewer needs."""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from constructs import IConstruct


def acknowledge(scope: IConstruct, reasons: Mapping[str, str]) -> None:
    """Acknowledge rule ids (granular where the pack has them) on a construct and its children."""
    cdk.Validations.of(scope).acknowledge(
        *(cdk.Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items())
    )
