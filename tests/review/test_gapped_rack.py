"""A rack with a gap (a node retired): the review finds each node's own gres.conf line in `gpu-c[01,03]`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpucluster.review import Review, as_markdown, review
from tests.review.conftest import ROOT, copy_project, git

CLUSTER = "clusters/gapped-rack.yaml"
GAPPED = (ROOT / "tests" / "render" / "cases" / "gapped-rack.yaml").read_text()
NODES = (
    "      nodes:\n"
    "        - {name: gpu-c01, address: 192.168.2.1}\n"
    "        - {name: gpu-c03, address: 192.168.2.3}\n"
)
UNBROKEN = '      node_range: {pattern: "gpu-c[01-03]", first_address: 192.168.2.1}\n'
FOUR_GPUS, TWO_GPUS = "gpus: {model: a100-80gb, count: 4}", "gpus: {model: a100-80gb, count: 2}"


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Review]:
    """Commits: `unbroken` (gpu-c[01-03]), `retired` (gpu-c02 gone), `halved` (row-c's nodes keep 2 GPUs)."""
    assert NODES in GAPPED and FOUR_GPUS in GAPPED
    repo = tmp_path_factory.mktemp("gapped") / "repo"
    repo.mkdir()
    copy_project(repo)
    git(repo, "init", "-q", "-b", "main")
    for tag, text in (
        ("unbroken", GAPPED.replace(NODES, UNBROKEN)),
        ("retired", GAPPED),
        ("halved", GAPPED.replace(FOUR_GPUS, TWO_GPUS)),
    ):
        (repo / CLUSTER).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", tag)
        git(repo, "tag", tag)
    cache = tmp_path_factory.mktemp("gapped-cache")
    return lambda base, head: review(repo, base, head, cluster=CLUSTER, cache_dir=cache)


def _slurmd_restarts(result: Review) -> list[list[str]]:
    return [f.hosts for c in result.clusters for f in c.findings if f.kind == "slurmd-restart"]


def test_a_gres_change_on_a_gapped_rack_restarts_slurmd_on_its_nodes(
    reviewed: Callable[[str, str], Review],
) -> None:
    result = reviewed("retired", "halved")
    assert _slurmd_restarts(result) == [["gpu-c01", "gpu-c03"]]
    md = as_markdown(result)
    row = next(line for line in md.splitlines() if "slurmd restart on 2 node(s)" in line)
    assert "`/etc/slurm/gres.conf`" in row, row
    assert "gpu-c03" in md
    assert "+NodeName=gpu-c[01,03] Name=gpu Type=a100 File=/dev/nvidia[0-1]" in md


def test_retiring_a_node_restarts_no_slurmd_beside_the_gap(reviewed: Callable[[str, str], Review]) -> None:
    result = reviewed("unbroken", "retired")
    assert _slurmd_restarts(result) == []
    md = as_markdown(result)
    assert "-NodeName=gpu-c[01-03] Name=gpu" in md and "+NodeName=gpu-c[01,03] Name=gpu" in md
