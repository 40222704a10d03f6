"""Fetch engine-active series from Prometheus's HTTP API (`/api/v1/query_range`), in chunks.

Prometheus refuses a range query whose answer would hold more than 11,000 points per series
("exceeded maximum resolution of 11,000 points per timeseries"), so a 28-day window at a 60 s step
(40,320 points) is asked for in chunks of at most 10,000 points that neither overlap nor leave gaps.
https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from gpucluster.utilization.series import ENGINE_ACTIVE, Series, parse_matrix

MAX_POINTS = 11_000  # Prometheus's limit per series per range query
CHUNK_POINTS = 10_000  # what we ask for, under the limit
DEFAULT_STEP_S = 60
TIMEOUT_S = 120


class PrometheusError(ValueError):
    """Prometheus could not be asked or refused the query; names the URL and a hint."""


def chunks(
    start_s: float, end_s: float, step_s: float, points: int = CHUNK_POINTS
) -> list[tuple[float, float]]:
    """(first, last) evaluation times of each chunk: start, start + step, … before end, points per chunk."""
    total = int((end_s - start_s) // step_s)
    return [
        (start_s + first * step_s, start_s + (min(first + points, total) - 1) * step_s)
        for first in range(0, total, points)
    ]


def query_range(url: str, query: str, first_s: float, last_s: float, step_s: float) -> Any:
    """One query_range answer as JSON; connection failures and error statuses are PrometheusError."""
    base = _base(url)
    params = urllib.parse.urlencode(
        {"query": query, "start": f"{first_s:.3f}", "end": f"{last_s:.3f}", "step": f"{step_s:g}"}
    )
    request = urllib.request.Request(
        f"{base}/api/v1/query_range?{params}", headers={"Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"{url}: HTTP {exc.code} for query_range: {_error_text(exc.read())}") from None
    except urllib.error.URLError as exc:
        raise PrometheusError(
            f"{url}: cannot connect ({exc.reason}); is Prometheus listening there (default port 9090)?"
        ) from None
    except TimeoutError:
        raise PrometheusError(f"{url}: no answer within {TIMEOUT_S} s; try a larger --step-s") from None
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        raise PrometheusError(f"{url}: the answer is not JSON; is this Prometheus's address?") from None


def _base(url: str) -> str:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise PrometheusError(f"{url}: not an http(s) URL; give e.g. http://head01:9090")
    return url.rstrip("/")


def _error_text(body: bytes) -> str:
    try:
        doc = json.loads(body)
        return f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"
    except (json.JSONDecodeError, AttributeError):
        return body[:200].decode("utf-8", "replace").strip() or "no body"


def fetch_answers(
    url: str, start_s: float, end_s: float, step_s: float, query: str = ENGINE_ACTIVE
) -> list[Any]:
    """The raw query_range answers of every chunk of [start_s, end_s), each checked to be a success."""
    answers = []
    for first, last in chunks(start_s, end_s, step_s):
        answer = query_range(url, query, first, last, step_s)
        parse_matrix(answer, url)  # an error answer stops here, naming the URL
        answers.append(answer)
    return answers


def fetch_series(url: str, start_s: float, end_s: float, step_s: float) -> list[Series]:
    """The engine-active series of [start_s, end_s) at step_s, from every chunk."""
    return [s for answer in fetch_answers(url, start_s, end_s, step_s) for s in parse_matrix(answer, url)]
