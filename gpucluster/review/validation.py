"""Validation findings of a failed synth: the app's validation report and its error annotations."""

from __future__ import annotations

import json
import re
from pathlib import Path

# The app's own validations and cdk-nag annotations print `[Error at /Stack/Path] RuleId: message`.
_ANNOTATION = re.compile(r"\[Error at (?P<path>[^\]]+)\] (?P<rule>[^:\s]+): (?P<message>.*)")


def findings_in(report: Path, output: str) -> list[str]:
    """Sorted, de-duplicated `[Error at /path] rule: message` lines from the report and the output."""
    found = {m.group(0) for m in _ANNOTATION.finditer(output)}
    found.update(_report_findings(report))
    return sorted(found)


def _report_findings(report: Path) -> set[str]:
    """Violations of validation-report.json (cdk-nag packs and our rule pack as validation plugins)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    found: set[str] = set()
    for plugin in data.get("pluginReports", []):
        for violation in plugin.get("violations", []):
            message = " ".join(str(violation.get("description", "")).split())
            for construct in violation.get("violatingConstructs", []):
                path = construct.get("constructPath", "?")
                found.add(f"[Error at /{path}] {violation.get('ruleName', '?')}: {message}")
    return found
