"""Fixtures of the spot tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.spot.emulated_s3 import versioned_bucket


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on loopback with an empty, versioned checkpoint bucket."""
    with versioned_bucket() as endpoint:
        yield endpoint
