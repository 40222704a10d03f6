"""Pull-request review: synthesize and render base and head, diff, classify risk, format."""

from gpucluster.review.engine import ClusterReview, Review, review
from gpucluster.review.errors import ReviewError
from gpucluster.review.findings import Finding
from gpucluster.review.report import as_json, as_markdown

__all__ = ["ClusterReview", "Finding", "Review", "ReviewError", "as_json", "as_markdown", "review"]
