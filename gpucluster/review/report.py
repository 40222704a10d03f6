"""Format a review: Markdown for a pull-request comment (summary first, details folded) and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from gpucluster.review.engine import ClusterReview, Review
from gpucluster.review.findings import KINDS, LABELS

MARKER = "<!-- gpucluster-review -->"
NO_CHANGES = "No changes: nothing in the cloud, on the nodes or on the bill changes."
# GitHub rejects comments over 65,536 characters; diffs are cut well before that.
MAX_DIFF_LINES = 120
MAX_IN_PLACE_ROWS = 6  # the table leads with what needs attention
MAX_COMMENT_CHARS = 60_000
_ICONS = {"data-loss": "🔴", "replace": "🟠", "slurmctld-restart": "🟠", "security": "🔴"}


def as_markdown(review: Review) -> str:
    """The PR comment: a hidden marker (to update it in place), summary table, folded details."""
    lines = [MARKER, f"## gpucluster review: `{review.base}` → `{review.head}`", ""]
    if not review.clusters:
        return "\n".join([*lines, NO_CHANGES, ""])
    for cluster in review.clusters:
        lines += _cluster(cluster)
    text = "\n".join(lines)
    if len(text) > MAX_COMMENT_CHARS:
        cut = text[:MAX_COMMENT_CHARS].rsplit("\n<details>", 1)[0]
        text = cut + "\n\n_Details cut to fit a comment: run `gpucluster review` locally for all of them._\n"
    return text


def _cluster(c: ClusterReview) -> list[str]:
    lines = [f"### `{c.cluster_file}`", "", "| Impact | Change |", "|---|---|"]
    in_place = [f for f in c.findings if f.kind == "in-place"]
    shown = [f for f in c.findings if f.kind != "in-place"] + in_place[:MAX_IN_PLACE_ROWS]
    for f in shown:
        lines.append(f"| {_ICONS.get(f.kind, '')} {LABELS[f.kind]} | {_cell(f.title)} |".replace("|  ", "| "))
    if len(in_place) > MAX_IN_PLACE_ROWS:
        lines.append(
            f"| in place | {len(in_place) - MAX_IN_PLACE_ROWS} more in-place changes: see the details |"
        )
    lines += ["", cost_line(c.cost_before_usd, c.cost_after_usd), ""]
    security = [f for f in c.findings if f.kind == "security"]
    lines.append(f"**Security:** {len(security)} finding(s)" if security else "**Security:** no new exposure")
    lines.append("")
    lines += _details_findings(c)
    lines += _details_cloud(c)
    lines += _details_files(c)
    return lines


def cost_line(before: float | None, after: float | None) -> str:
    """`**Cost:** $a/month → $b/month (+$d, +p%)`, or why it is unknown."""
    if before is None or after is None:
        return "**Cost:** unknown (the cost model needs `economics`)"
    delta = after - before
    pct = f", {delta / before:+.1%}" if before else ""
    sign = "+" if delta >= 0 else "-"
    return f"**Cost:** ${before:,.0f}/month → ${after:,.0f}/month ({sign}${abs(delta):,.0f}{pct})"


def _details_findings(c: ClusterReview) -> list[str]:
    detailed = [f for f in c.findings if f.detail]
    if not detailed:
        return []
    lines = ["<details><summary>Details of the impacts</summary>", ""]
    for f in detailed:
        lines += [f"- **{LABELS[f.kind]}**: {f.title}", *[f"  - {_cell(d)}" for d in f.detail]]
    return [*lines, "", "</details>", ""]


def _details_cloud(c: ClusterReview) -> list[str]:
    if not c.stacks and not c.synth_errors:
        return []
    counts: dict[str, int] = {}
    for s in c.stacks:
        for r in s.resources:
            counts[r.change] = counts.get(r.change, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no resource changes"
    lines = [f"<details><summary>CloudFormation: {summary}</summary>", ""]
    for s in c.stacks:
        lines += [f"**{s.stack}**", "", "| Resource | Type | Change | Impact |", "|---|---|---|---|"]
        lines += [f"| `{r.logical_id}` | {r.type} | {r.change} | {r.impact} |" for r in s.resources]
        lines.append("")
    for error in c.synth_errors:
        lines += ["Head synth failed:", "```", error, "```", ""]
    return [*lines, "</details>", ""]


def _details_files(c: ClusterReview) -> list[str]:
    lines: list[str] = []
    for f in c.files:
        hosts = ", ".join(f.hosts) or "no hosts"
        lines += [
            f"<details><summary>Node file <code>{f.destination}</code> → {len(f.hosts)} host(s) "
            f"({', '.join(f.groups)})</summary>",
            "",
            f"Hosts: {hosts}",
            "",
            "```diff",
            _clip(f.diff),
            "```",
            "",
            "</details>",
            "",
        ]
    return lines


def _clip(diff: str) -> str:
    lines = diff.rstrip("\n").splitlines()
    if len(lines) <= MAX_DIFF_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:MAX_DIFF_LINES], f"... {len(lines) - MAX_DIFF_LINES} more lines"])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def as_dict(review: Review) -> dict[str, Any]:
    """The review as plain data; findings carry their kind so machines can gate on them."""
    data = asdict(review)
    for cluster in data["clusters"]:
        for stack in cluster["stacks"]:
            for resource in stack["resources"]:  # whole resources stay in the templates
                del resource["old"], resource["new"]
    data["kinds"] = [k for k in KINDS if k in review.kinds()]
    data["no_changes"] = not review.clusters
    return data


def as_json(review: Review) -> str:
    """as_dict as indented JSON."""
    return json.dumps(as_dict(review), indent=2, default=str) + "\n"
