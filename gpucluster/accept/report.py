"""Node reports (JSON) and the summary across nodes (JSON and a Markdown table for a PR or ticket)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from gpucluster.accept.declared import Declared
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.results import CheckResult

# Slurm keeps a node's Reason as one line; `scontrol update ... reason="…"` must not see quotes.
# 180, not 200: the acceptance playbook prefixes "gpucluster accept: " and the whole stays ≤ 200.
DRAIN_REASON_MAX_CHARS: Final = 180
OBSERVATIONS_SUFFIX: Final = ".observations.json"  # the playbook keeps them next to the reports
SUMMARY_JSON: Final = "summary.json"
SUMMARY_MD: Final = "summary.md"
_ASCII: Final = {"×": "x", "≥": ">=", "…": "..."}


def drain_reason(checks: list[CheckResult]) -> str | None:
    """The first failed check as a Slurm Reason: one ASCII line, no quotes, ≤ 180 chars; None if all pass."""
    first = next((c for c in checks if c.status == "fail"), None)
    if first is None:
        return None
    text = f"{first.name}: {first.message}"
    for symbol, plain in _ASCII.items():
        text = text.replace(symbol, plain)
    text = re.sub(r"[\"'`\\]", "", text)
    text = " ".join(text.encode("ascii", "replace").decode("ascii").split())
    if len(text) > DRAIN_REASON_MAX_CHARS:
        text = text[: DRAIN_REASON_MAX_CHARS - 3].rstrip() + "..."
    return text


def node_report(
    declared: Declared, checks: list[CheckResult], timestamp: datetime | None = None
) -> dict[str, Any]:
    """The JSON report of one node."""
    when = (timestamp or datetime.now(UTC)).isoformat(timespec="seconds")
    return {
        "cluster": declared.cluster,
        "host": declared.host,
        "profile": declared.profile,
        "timestamp": when,
        "passed": all(c.status != "fail" for c in checks),
        "checks": [c.to_json() for c in checks],
        "drain_reason": drain_reason(checks),
    }


def skipped_report(declared: Declared, why: str, timestamp: datetime | None = None) -> dict[str, Any]:
    """The JSON report of a node that was not probed (it runs jobs): not passed, no checks."""
    return {**node_report(declared, [], timestamp), "passed": False, "skipped": why}


def _read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AcceptInputError(f"{path}: not a readable node report ({exc})") from None
    if not isinstance(data, dict) or not {"host", "passed", "checks"} <= set(data):
        raise AcceptInputError(f"{path}: not a node report (needs host, passed, checks)")
    return data


def read_reports(directory: Path) -> list[dict[str, Any]]:
    """Every node report in `directory` (not the summary, not observations), by host name."""
    if not directory.is_dir():
        raise AcceptInputError(f"{directory}: not a directory of node reports")
    paths = sorted(
        p
        for p in directory.glob("*.json")
        if p.name != SUMMARY_JSON and not p.name.endswith(OBSERVATIONS_SUFFIX)
    )
    if not paths:
        raise AcceptInputError(f"{directory}: no node reports (*.json); run `evaluate` first")
    return sorted((_read_report(p) for p in paths), key=lambda r: str(r["host"]))


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and, per node, the failed checks and the drain reason."""
    nodes = [
        {
            "host": r["host"],
            "passed": bool(r["passed"]),
            "failed_checks": [c["name"] for c in r["checks"] if c.get("status") == "fail"],
            "drain_reason": r.get("drain_reason"),
            "skipped": r.get("skipped"),
            "admission": r.get("admission"),
        }
        for r in reports
    ]
    passed = sum(1 for n in nodes if n["passed"])
    skipped = sum(1 for n in nodes if n["skipped"])
    clusters = sorted({str(r.get("cluster", "")) for r in reports})
    return {
        "clusters": clusters,
        "nodes": len(nodes),
        "passed": passed,
        "failed": len(nodes) - passed - skipped,
        "skipped": skipped,
        "hosts": nodes,
    }


def summary_markdown(data: dict[str, Any]) -> str:
    """The summary as a Markdown table: host | passed | failed checks."""
    lines = [
        f"Acceptance: {data['passed']} of {data['nodes']} nodes passed ({', '.join(data['clusters'])})"
        + (f", {data['skipped']} skipped." if data.get("skipped") else "."),
        "",
        "| host | passed | failed checks |",
        "| --- | --- | --- |",
    ]
    for node in data["hosts"]:
        failed = ", ".join(f"`{name}`" for name in node["failed_checks"]) or "—"
        verdict = (
            f"skipped: {node['skipped']}" if node.get("skipped") else ("yes" if node["passed"] else "no")
        )
        if node.get("admission") and " drained for its operator" in node["admission"]:
            verdict += " (operator's drain kept)"
        lines.append(f"| {node['host']} | {verdict} | {failed} |")
    return "\n".join(lines) + "\n"
