"""What a converge did, read from ansible-playbook's output, and what the review predicts for a change."""

from __future__ import annotations

import re
from pathlib import Path

from gpucluster.clusterfile import load
from gpucluster.render import DESTINATIONS
from gpucluster.render.output import manifest, render_all
from gpucluster.review.classify_nodes import classify_files
from gpucluster.review.findings import Finding
from gpucluster.review.nodes import diff_files
from gpucluster.review.snapshot import Snapshot

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


def _snapshot(path: Path, text: str) -> Snapshot:
    path.write_text(text)
    cluster = load(path).cluster
    files = render_all(cluster, str(path))
    hosts = {name: group["hosts"] for name, group in manifest(cluster, files)["groups"].items()}
    return Snapshot(True, cluster.model_dump(mode="json"), files, hosts, None)  # type: ignore[arg-type]


def predicted(cluster_file: Path, base_text: str, head_text: str) -> list[Finding]:
    """The node-file findings `gpucluster review` reports for a change of the cluster file's text."""
    scratch = cluster_file.with_name("review-scratch.yaml")
    base, head = _snapshot(scratch, base_text), _snapshot(scratch, head_text)
    scratch.unlink()
    model = head.model
    return classify_files(
        diff_files(base, head, dict(DESTINATIONS)),
        slurm_version=str(model["versions"]["slurm"]),  # type: ignore[index]
        controller=str(model["slurm"]["controller"]),  # type: ignore[index]
        slurmd_hosts=_hosts(head),
        new_hosts=frozenset(_hosts(head) - _hosts(base)),
    )


def _hosts(snap: Snapshot) -> set[str]:
    return {h for hosts in snap.hosts.values() for h in hosts}
