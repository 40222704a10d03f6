"""What a converge did, read from ansible-playbook's output, and what the review predicts for a change."""

from __future__ import annotations

import re
from pathlib import Path

from gpucluster.render import DESTINATIONS
from gpucluster.review.classify_nodes import classify_snapshots
from gpucluster.review.findings import Finding
from gpucluster.review.nodes import diff_files
from gpucluster.review.snapshot import take
from gpucluster_rack import ROOT

_BLOCK = re.compile(r"^(RUNNING HANDLER|TASK|PLAY) \[(.*?)\]", re.M)
_RESULT = re.compile(r"^(changed|ok): \[([^\]\s]+)(?: -> [^\]]+)?\]", re.M)


def handlers_run(output: str) -> dict[str, set[str]]:
    """{handler name: hosts it ran on (ok or changed)} from the default callback's output."""
    runs: dict[str, set[str]] = {}
    marks = list(_BLOCK.finditer(output))
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        if mark.group(1) != "RUNNING HANDLER":
            continue
        name = mark.group(2).split(" : ")[-1]
        body = output[mark.end() : following.start() if following else len(output)]
        runs.setdefault(name, set()).update(host for _, host in _RESULT.findall(body))
    return {name: hosts for name, hosts in runs.items() if hosts}


def predicted(cluster_file: Path, base_text: str, head_text: str) -> list[Finding]:
    """The node-file findings `gpucluster review` reports for a change of the cluster file's text.

    Each side is taken the way the review takes it (gpucluster.review.snapshot.take, this checkout's code).
    """
    scratch = cluster_file.with_name("review-scratch.yaml")
    snaps = []
    for text in (base_text, head_text):
        scratch.write_text(text)
        snaps.append(take(ROOT, str(scratch)))
    scratch.unlink()
    base, head = snaps
    return classify_snapshots(base, head, diff_files(base, head, dict(DESTINATIONS)))
