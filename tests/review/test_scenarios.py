"""End to end in a temporary git repository: each PR-like change reviewed against `base`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucluster.cli import main
from gpucluster.review import Review, as_json, as_markdown, review
from gpucluster.review.command import exit_status
from gpucluster.review.report import MARKER, NO_CHANGES

Reviewed = Callable[[str], Review]


def table(markdown: str) -> list[str]:
    """The summary-table rows of the Markdown (the first table, header and rule left out)."""
    lines = markdown.splitlines()
    start = lines.index("| Impact | Change |") + 2
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def test_retention_shortened_is_flagged_as_data_loss(reviewed: Reviewed) -> None:
    result = reviewed("retention")
    md = as_markdown(result)
    rows = table(md)
    assert rows[0].startswith("| 🔴 data-loss risk |"), rows
    assert any(
        "aws.checkpoint.noncurrent_version_days: 30 days → 7 days: retention shortened" in r for r in rows
    )
    assert any("aws.checkpoint.retention_days: kept forever → 90 days" in r for r in rows)
    assert "CheckpointsBucket" in md  # the lifecycle change shows in the CloudFormation details
    assert exit_status(result, ["data-loss"]) == 3
    assert exit_status(result, ["replace"]) == 0


def test_adding_spot_capacity_shows_cost_and_new_resources(reviewed: Reviewed) -> None:
    result = reviewed("spot")
    md = as_markdown(result)
    cluster = result.clusters[0]
    assert cluster.cost_before_usd is not None and cluster.cost_after_usd is not None
    assert cluster.cost_after_usd > cluster.cost_before_usd
    assert "**Cost:** $" in md and "/month → $" in md and "(+$" in md
    added = {r.logical_id for s in cluster.stacks for r in s.resources if r.change == "add"}
    assert any(x.startswith("p5spotbTemplate") for x in added), added
    # No Auto Scaling group: a new group is a launch template the power programs launch from on demand.
    assert any("(AWS::EC2::LaunchTemplate) created: new instances from now on" in r for r in table(md))
    assert "| add | WILL_CREATE |" in md
    # New Slurm nodes on Slurm 25.11: `scontrol reconfigure` restarts slurmctld in place (23.11+). The
    # file goes to every Slurm node name: head01, 8 rack nodes, p5-od's 4, p5-spot's 8 H100 and 8 H200 names.
    assert any("/etc/slurm/slurm.conf` on 29 host(s): `scontrol reconfigure` only" in r for r in table(md))
    assert not any("slurmctld restart" in r for r in table(md))
    assert exit_status(result, ["replace"]) == 0  # nothing that runs is replaced


def test_partition_change_is_reconfigure_only(reviewed: Reviewed) -> None:
    md = as_markdown(reviewed("partition"))
    rows = table(md)
    assert any(
        "`/etc/slurm/slurm.conf` on 29 host(s): `scontrol reconfigure` only, no restart" in r for r in rows
    ), rows
    assert not any("restart" in r and "no restart" not in r for r in rows), rows
    cloud = "PartitionName=cloud Nodes=p5-od-[1-4],p5-spot-[1-8],p5-spot-h200-[1-8] Default=NO"
    assert f"-{cloud} MaxTime=2-00:00:00 DefCpu" in md
    assert f"+{cloud} MaxTime=1-00:00:00 DefCpu" in md
    assert "data-loss" not in md


def test_driver_bump_reboots_the_gpu_nodes(reviewed: Reviewed) -> None:
    result = reviewed("driver")
    md = as_markdown(result)
    rows = table(md)
    assert any(
        "nvidia_driver_branch 580 → 590" in r and "rolling reboot of 8 GPU nodes on-prem" in r for r in rows
    ), rows
    assert "gpu-a01, gpu-a02, gpu-a03, gpu-a04, gpu-b01" in md
    assert (
        "up to 12 cloud nodes get the driver from the node image (image stack, or aws.ami_id): the pin change"
        " builds a new AMI with 590.48.01" in md
    )
    assert exit_status(result, ["data-loss", "replace", "security"]) == 0


def test_a_role_change_lists_the_role_its_hosts_and_what_it_may_restart(reviewed: Reviewed) -> None:
    result = reviewed("role")
    rows = table(as_markdown(result))
    assert any(
        "slurmd restart (drain needed) | Ansible role slurm_node changed: runs on 8 host(s) (slurm_compute)"
        "; may: restarts slurmd" in r
        for r in rows
    ), rows
    finding = next(f for f in result.clusters[0].findings if "role slurm_node" in f.title)
    assert finding.detail[0] == "changed: ansible/roles/slurm_node/tasks/main.yml"
    assert len(finding.hosts) == 8
    assert not result.clusters[0].files  # no node file changed: the rendered files are the same


def test_no_change_says_so(review_repo: Path, tmp_path: Path) -> None:
    result = review(review_repo, "base", cache_dir=tmp_path)  # the work tree is the base commit
    md = as_markdown(result)
    assert md.splitlines()[0] == MARKER
    assert NO_CHANGES in md and "No changes" in md
    assert '"no_changes": true' in as_json(result)


def test_cli_json_out_and_bad_cluster(
    review_repo: Path, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.chdir(review_repo)
    out = tmp_path / "review.json"
    assert (
        main(["review", "--base", "base", "--format", "json", "--out", str(out), "--fail-on", "data-loss"])
        == 0
    )
    assert json.loads(out.read_text())["no_changes"] is True
    assert main(["review", "--base", "base", "--cluster", "clusters/nope.yaml"]) == 2
    err = capsys.readouterr().err
    assert "clusters/nope.yaml: no such cluster file" in err and "Traceback" not in err
