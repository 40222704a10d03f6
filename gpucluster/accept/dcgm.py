"""Parse `dcgmi diag -r LEVEL -j`: per test pass/fail/skip/warn and the overall verdict.

DCGM 3.x names the top object "DCGM GPU Diagnostic", 4.x "DCGM Diagnostic"; both hold
`test_categories[].tests[].results[]`, each result with a `status` and, on failure, `warnings`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from gpucluster.accept.errors import ParseError

Status = Literal["pass", "fail", "skip", "warn"]
_STATUS: dict[str, Status] = {
    "pass": "pass",
    "fail": "fail",
    "skip": "skip",
    "warn": "warn",
    "not run": "skip",
}
_ROOTS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")


@dataclass(frozen=True)
class DiagTest:
    """One diagnostic test, its worst status over the GPUs, and the first warning text if any."""

    category: str
    name: str
    status: Status
    detail: str


@dataclass(frozen=True)
class DcgmDiag:
    """All tests of one `dcgmi diag` run."""

    tests: tuple[DiagTest, ...]

    @property
    def passed(self) -> bool:
        """True unless a test failed (skips and warnings do not fail the run)."""
        return all(t.status != "fail" for t in self.tests)

    @property
    def failed(self) -> tuple[DiagTest, ...]:
        """The tests that failed."""
        return tuple(t for t in self.tests if t.status == "fail")


def _warning_text(result: dict[str, Any]) -> str:
    for warning in result.get("warnings") or []:
        text = warning.get("warning", "") if isinstance(warning, dict) else str(warning)
        if text:
            return " ".join(str(text).split())
    return ""


def _test(category: str, test: Any) -> DiagTest:
    if not isinstance(test, dict) or not isinstance(test.get("results"), list):
        raise ParseError(f"category {category!r}: each test needs a name and a results list")
    statuses: list[Status] = []
    detail = ""
    for result in test["results"]:
        raw = str(result.get("status", "")).strip().lower() if isinstance(result, dict) else ""
        if raw not in _STATUS:
            raise ParseError(f"test {test.get('name')!r}: unknown status {raw!r}")
        statuses.append(_STATUS[raw])
        if _STATUS[raw] in ("fail", "warn") and not detail:
            gpu = result.get("gpu_ids", "")
            detail = (f"GPU {gpu}: " if gpu != "" else "") + _warning_text(result)
    worst: Status = next((s for s in ("fail", "warn", "pass") if s in statuses), "skip")
    return DiagTest(category, str(test.get("name", "?")), worst, detail.strip().rstrip(":"))


def parse_dcgm_diag(text: str) -> DcgmDiag:
    """Parse the JSON of `dcgmi diag -j`; raise ParseError on anything else."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON from `dcgmi diag -j` ({exc.msg} at line {exc.lineno})") from None
    root = next((data[k] for k in _ROOTS if isinstance(data, dict) and k in data), None)
    if not isinstance(root, dict) or not isinstance(root.get("test_categories"), list):
        raise ParseError("expected a 'DCGM GPU Diagnostic' object with 'test_categories'")
    tests: list[DiagTest] = []
    for category in root["test_categories"]:
        if not isinstance(category, dict) or not isinstance(category.get("tests"), list):
            raise ParseError("each entry of test_categories needs a 'tests' list")
        tests += [_test(str(category.get("category", "?")), t) for t in category["tests"]]
    if not tests:
        raise ParseError("`dcgmi diag` ran no tests")
    return DcgmDiag(tuple(tests))
