"""The one error a review raises for bad input: a bad revision, a missing file, a failed step."""

from __future__ import annotations


class ReviewError(Exception):
    """A review request that cannot be carried out; the message says what to change."""
