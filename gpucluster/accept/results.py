"""The outcome of one acceptance check, and the three ways to make one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

CheckStatus = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class CheckResult:
    """One check on one node: what the profile expects, what was found, and a sentence for humans."""

    name: str
    status: CheckStatus
    expected: str
    found: str
    message: str

    def to_json(self) -> dict[str, str]:
        """The check as a JSON object of the node report."""
        return asdict(self)


def passed(name: str, expected: str, found: str) -> CheckResult:
    """A check the node met."""
    return CheckResult(name, "pass", expected, found, f"ok: {found}")


def failed(name: str, expected: str, found: str, problem: str = "") -> CheckResult:
    """A check the node did not meet; `problem` is the tool's own complaint, if any."""
    message = f"expected {expected}, found {found}" + (f" ({problem})" if problem else "")
    return CheckResult(name, "fail", expected, found, message)


def skipped(name: str, why: str) -> CheckResult:
    """A check that does not apply to the node's profile."""
    return CheckResult(name, "skip", "", "", f"skipped: {why}")


def verdict(name: str, ok: bool, expected: str, found: str, problem: str = "") -> CheckResult:
    """Pass or fail by `ok`."""
    return passed(name, expected, found) if ok else failed(name, expected, found, problem)
