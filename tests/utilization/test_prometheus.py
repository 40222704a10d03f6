"""The query_range client against a local HTTP server serving canned answers (127.0.0.1 only)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gpucluster.cli import main
from gpucluster.utilization import commands
from gpucluster.utilization.prometheus import MAX_POINTS, PrometheusError, chunks, fetch_series
from gpucluster.utilization.series import ENGINE_ACTIVE, Series, read_export
from tests.utilization.synthetic import START_S, answer, gpu_labels

NOW_S = START_S + 8 * 86400 + 17  # 8 days after a midnight, not on a step


class FakePrometheus(BaseHTTPRequestHandler):
    """query_range for one rack GPU at 50% engine active, held by job 9, at every requested step."""

    requests: ClassVar[list[dict[str, str]]] = []
    status = 200

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        type(self).requests.append({"path": url.path, **query})
        if self.status != 200:
            self._reply(
                self.status,
                {
                    "status": "error",
                    "errorType": "bad_data",
                    "error": "exceeded maximum resolution of 11,000 points per timeseries",
                },
            )
            return
        first, last, step = float(query["start"]), float(query["end"]), float(query["step"])
        times = [first + i * step for i in range(int((last - first) // step) + 1)]
        labels = gpu_labels("rack", "rack-a", "gpu-a01", 0, job="9")
        self._reply(200, answer([Series(labels, tuple((t, 0.5) for t in times))]))

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def prometheus() -> Iterator[str]:
    FakePrometheus.requests = []
    FakePrometheus.status = 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_chunks_cover_the_window_without_overlap_or_gap() -> None:
    parts = chunks(0, 28 * 86400, 60)
    assert len(parts) == 5 and parts[0] == (0, 9_999 * 60) and parts[1][0] == 10_000 * 60
    assert parts[-1][1] == 28 * 86400 - 60
    assert all((last - first) / 60 + 1 <= MAX_POINTS for first, last in parts)


def test_eight_days_at_a_minute_come_in_two_queries_and_measure_exactly(prometheus: str) -> None:
    start, end = commands.window(8, 60, lambda: NOW_S)
    assert (start, end) == (START_S, START_S + 8 * 86400)
    series = fetch_series(prometheus, start, end, 60)
    calls = FakePrometheus.requests
    assert [c["path"] for c in calls] == ["/api/v1/query_range"] * 2
    assert calls[0]["query"] == ENGINE_ACTIVE and calls[0]["step"] == "60"
    assert float(calls[1]["start"]) == float(calls[0]["end"]) + 60
    points = sum(len(s.points) for s in series)
    assert points == 8 * 1440  # every minute once


def test_an_error_status_names_the_url_and_prometheus_error(prometheus: str) -> None:
    FakePrometheus.status = 400
    with pytest.raises(
        PrometheusError, match=r"127\.0\.0\.1:\d+: HTTP 400 for query_range: bad_data: exceeded"
    ):
        fetch_series(prometheus, START_S, START_S + 3600, 60)


def test_the_verb_exits_2_without_traceback_when_prometheus_is_unreachable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["utilization", "--prometheus", "http://127.0.0.1:9", "--days", "1"]) == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9: cannot connect" in err and "Traceback" not in err
    assert main(["utilization", "--prometheus", "head01:9090"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().err


def test_save_writes_the_answers_and_the_verb_reads_them_back(
    prometheus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(commands.time, "time", lambda: NOW_S)
    out = tmp_path / "util.json"
    assert main(["utilization", "--prometheus", prometheus, "--days", "8", "--save", str(out)]) == 0
    measured_live = capsys.readouterr().out
    saved = read_export(out.read_text(), str(out))
    assert (saved.start_s, saved.end_s, saved.step_s, saved.prometheus) == (
        START_S,
        START_S + 8 * 86400,
        60,
        prometheus,
    )
    capsys.readouterr()
    assert main(["utilization", "--export", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rack = doc["sites"][0]
    assert rack["available_gpu_hours"] == pytest.approx(8 * 24) and rack["activity"] == pytest.approx(0.5)
    # one of the example's 64 owned rack GPUs was scraped: the verdict counts the other 63 as idle
    assert doc["verdict"]["utilization"] == pytest.approx(0.5 / 64) and doc["verdict"]["verdict"] == "cloud"
    assert len(doc["daily"]["rack"]) == 8
    assert "rack-a" in measured_live
    assert main(["utilization", "--export", str(out)]) == 0
    assert capsys.readouterr().out == measured_live.replace(f"Prometheus {prometheus}", f"export {out}")
