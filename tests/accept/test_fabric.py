"""The fabric gate across nodes: the srun plan, each run judged, and the node or link the pairs name.

Runs are the constructed two-node sample (tests/accept/samples/healthy/all_reduce_perf-2nodes.txt),
variants built from it here (slow: bus bandwidth halved; corrupt: #wrong > 0) and srun failures recorded
on the test rack (tests/accept/samples/testrack/srun-*.txt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster.accept.command_fabric import fabric_finding, fabric_plan
from gpucluster.accept.declared import declared_for
from gpucluster.accept.errors import AcceptInputError
from gpucluster.accept.fabric import FABRIC_OBSERVATIONS, analyse, fabric_from, judge, load_fabric
from gpucluster.accept.fabric_plan import Launch, ranks_per_node, ring_pairs
from gpucluster.cli import main as cli_main
from gpucluster.clusterfile import Cluster, load_text
from gpucluster_rack.rack_cluster import rack_cluster_file
from tests.accept.test_cli import EXAMPLE, write_obs
from tests.conftest import ROOT

SAMPLE = (ROOT / "tests" / "accept" / "samples" / "healthy" / "all_reduce_perf-2nodes.txt").read_text()
LAUNCH = Launch(reservation="gpucluster-accept", all_reduce_perf="/opt/nccl-tests/build/all_reduce_perf")
RACK = ("gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04")
TESTRACK = ROOT / "tests" / "accept" / "samples" / "testrack"
NO_PMIX = "srun: error: mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:195: pmi/pmix: can not load PMIx library"


def healthy() -> dict[str, Any]:
    return {"rc": 0, "stdout": SAMPLE, "stderr": ""}


def slow() -> dict[str, Any]:
    """The healthy run at half its bus bandwidth (a degraded HCA or link), below the 320 GB/s threshold."""
    text = SAMPLE.replace("191.05  358.22", "95.52  179.11").replace("191.48  359.02", "95.74  179.51")
    assert text != SAMPLE
    return {"rc": 0, "stdout": text, "stderr": ""}


def corrupt() -> dict[str, Any]:
    text = SAMPLE.replace("358.22      0", "358.22      3")
    assert text != SAMPLE
    return {"rc": 1, "stdout": text, "stderr": ""}


def launch_failed() -> dict[str, Any]:
    """Recorded on the test rack: srun --mpi=pmix where libpmix2 is not installed."""
    return {"rc": 1, "stdout": "", "stderr": (TESTRACK / "srun-mpi-pmix-without-libpmix2.txt").read_text()}


def binary_missing() -> dict[str, Any]:
    """Recorded on the test rack: srun of an all_reduce_perf the nodes do not have."""
    return {"rc": 2, "stdout": "", "stderr": (TESTRACK / "srun-all_reduce_perf-missing.txt").read_text()}


def runs(hosts: tuple[str, ...], results: dict[str, dict[str, Any]], default: dict[str, Any]) -> Any:
    """The fabric file for the plan over `hosts`, with `results` by run name and `default` for the rest."""
    names = ["all"] if len(hosts) > 2 else []
    names += [f"{a}+{b}" for a, b in ring_pairs(hosts)]
    members = {"all": list(hosts)} | {f"{a}+{b}": [a, b] for a, b in ring_pairs(hosts)}
    return {
        "hosts": list(hosts),
        "runs": [{"name": n, "hosts": members[n], "cmd": "srun …"} | results.get(n, default) for n in names],
    }


def findings(data: Any, min_gbs: float = 320.0) -> dict[str, tuple[str, str, str]]:
    hosts, recorded = fabric_from(data)
    verdicts = [judge(run, min_gbs) for run in recorded]
    return {h: (f.status, f.found, f.problem) for h, f in analyse(hosts, verdicts).items()}


def test_the_ring_puts_every_node_in_two_pairs() -> None:
    assert ring_pairs(["n1"]) == []
    assert ring_pairs(["n1", "n2"]) == [("n1", "n2")]
    assert ring_pairs(["n1", "n2", "n3"]) == [("n1", "n2"), ("n2", "n3"), ("n3", "n1")]
    assert len(ring_pairs([f"n{i}" for i in range(32)])) == 32


def test_the_plan_launches_one_mpi_rank_per_gpu_in_the_reservation(example: Cluster) -> None:
    plan = fabric_plan(example, list(RACK[:3]), LAUNCH)
    assert [(r["name"], r["hosts"]) for r in plan["runs"]] == [
        ("all", list(RACK[:3])),
        ("gpu-a01+gpu-a02", ["gpu-a01", "gpu-a02"]),
        ("gpu-a02+gpu-a03", ["gpu-a02", "gpu-a03"]),
        ("gpu-a03+gpu-a01", ["gpu-a03", "gpu-a01"]),
    ]
    argv = plan["runs"][1]["argv"]
    assert argv[0] == "srun"
    assert argv[-9:] == [LAUNCH.all_reduce_perf, "-b", "1G", "-e", "1G", "-f", "2", "-g", "1"]
    assert {
        "--reservation=gpucluster-accept",
        "--nodelist=gpu-a01,gpu-a02",
        "--nodes=2",
        "--ntasks-per-node=8",
        "--gres=gpu:8",
        "--mpi=pmix",
    } <= set(argv)
    assert plan["left_out"] == {}


def test_fewer_cpus_than_gpus_give_fewer_ranks_that_each_drive_several_gpus() -> None:
    assert [ranks_per_node(8, cpus) for cpus in (224, 8, 7, 4, 3, 2, 1)] == [8, 8, 4, 4, 2, 2, 1]
    assert ranks_per_node(6, 4) == 3


def test_a_single_candidate_gets_no_run_and_a_skip(example: Cluster) -> None:
    assert fabric_plan(example, ["gpu-a01"], LAUNCH)["runs"] == []
    assert findings({"hosts": ["gpu-a01"], "runs": []}) == {
        "gpu-a01": (
            "skip",
            "fewer than two idle nodes passed every other check: no pair to test the fabric with",
            "",
        )
    }


def test_a_healthy_fabric_passes_every_node_with_its_lowest_run() -> None:
    found = findings(runs(RACK, {}, healthy()))
    assert {s for s, _, _ in found.values()} == {"pass"}
    assert found["gpu-a01"][1] == "lowest peak busbw 359.02 GB/s (all) over 3 passing run(s)"


def test_a_node_whose_every_pair_is_slow_is_named_and_its_neighbours_pass() -> None:
    data = runs(RACK, {"all": slow(), "gpu-a01+gpu-a02": slow(), "gpu-a02+gpu-a03": slow()}, healthy())
    found = findings(data)
    assert found["gpu-a02"] == (
        "fail",
        "bad node: every pair with it failed (gpu-a01+gpu-a02, gpu-a02+gpu-a03; peak busbw 179.51 GB/s)",
        "",
    )
    assert found["gpu-a01"] == (
        "pass",
        "lowest peak busbw 359.02 GB/s (gpu-a04+gpu-a01) over 1 passing run(s); "
        "its pair with gpu-a02 failed there",
        "",
    )
    assert [h for h, (s, _, _) in found.items() if s == "fail"] == ["gpu-a02"]


def test_a_lone_failing_pair_is_a_bad_link_and_fails_both_its_nodes() -> None:
    found = findings(runs(RACK, {"gpu-a03+gpu-a04": corrupt()}, healthy()))
    link = (
        "bad link gpu-a03+gpu-a04: that pair failed (3 wrong values (data corruption)), "
        "both nodes pass elsewhere"
    )
    assert found["gpu-a03"] == found["gpu-a04"] == ("fail", link, "srun all_reduce_perf: exit status 1")
    assert found["gpu-a01"][0] == found["gpu-a02"][0] == "pass"


def test_when_everything_fails_it_says_it_cannot_tell_and_fails_every_node() -> None:
    found = findings(runs(RACK[:3], {}, launch_failed()))
    assert set(found.values()) == {
        (
            "fail",
            "every pair failed, so no one node or link is to blame (gpu-a01+gpu-a02: no result)",
            f"srun all_reduce_perf: {NO_PMIX}",
        )
    }
    missing = findings(runs(RACK[:2], {}, binary_missing()))["gpu-a02"]
    assert missing[2] == (
        "srun all_reduce_perf: slurmstepd-n1: error: execve(): /opt/nccl-tests/build/all_reduce_perf: "
        "No such file or directory"
    )
    two = findings(runs(RACK[:2], {}, slow()))
    assert {s for s, _, _ in two.values()} == {"fail"}
    assert two["gpu-a01"][1].startswith("every pair failed, so no one node or link is to blame")


def test_tested_nodes_without_recorded_pairs_fail() -> None:
    found = findings({"hosts": list(RACK[:2]), "runs": []})
    assert set(found.values()) == {("fail", "no pair run was recorded for these nodes", "")}


def test_only_the_run_across_all_nodes_failing_fails_every_node() -> None:
    found = findings(runs(RACK, {"all": slow()}, healthy()))
    assert set(found.values()) == {
        (
            "fail",
            "the run across all 4 nodes failed (peak busbw 179.51 GB/s) while every pair passed: "
            "not one node or link",
            "",
        )
    }


def test_good_numbers_from_a_failed_launch_do_not_pass() -> None:
    verdict = judge(fabric_from(runs(RACK[:2], {}, healthy() | {"rc": 1, "stderr": NO_PMIX}))[1][0], 320.0)
    assert (verdict.ok, verdict.found, verdict.problem) == (
        False,
        "peak busbw 359.02 GB/s",
        f"srun all_reduce_perf: {NO_PMIX}",
    )


def test_a_profile_threshold_override_judges_the_runs(example: Cluster, tmp_path: Path) -> None:
    path = tmp_path / FABRIC_OBSERVATIONS
    path.write_text(json.dumps(runs(RACK[:2], {}, slow())))
    finding = fabric_finding(example, "gpu-a01", path)
    assert finding is not None and finding.status == "fail"
    assert declared_for(example, "gpu-a01").min_multi_node_busbw_gbs == 320.0
    assert fabric_finding(example, "gpu-b01", path) is None  # not tested
    assert findings(runs(RACK[:2], {}, slow()), min_gbs=150.0)["gpu-a01"][0] == "pass"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ([], "expected a JSON object"),
        ({"hosts": ["a", "b"], "runs": [{"name": "a+b", "hosts": ["a"], "rc": 0}]}, r"runs\[0\]\.hosts"),
        ({"hosts": ["a", "b"], "runs": [{"name": "a+b", "hosts": ["a", "b"], "rc": "0"}]}, r"runs\[0\]\.rc"),
        ({"hosts": ["a", "b"], "runs": [{"name": "x", "hosts": ["a", "b"], "rc": 0, "stdout": 7}]}, "string"),
    ],
)
def test_a_malformed_fabric_file_is_refused_with_its_path(data: Any, error: str, tmp_path: Path) -> None:
    path = tmp_path / FABRIC_OBSERVATIONS
    path.write_text(json.dumps(data))
    with pytest.raises(AcceptInputError, match=error) as raised:
        load_fabric(path)
    assert str(path) in str(raised.value)


def test_evaluate_with_the_fabric_runs_drains_the_bad_node_with_the_check_as_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric = tmp_path / FABRIC_OBSERVATIONS
    slow_b = {"all": slow(), "gpu-a01+gpu-a02": slow(), "gpu-a02+gpu-a03": slow()}
    fabric.write_text(json.dumps(runs(RACK[:3], slow_b, healthy())))
    verdicts = {}
    for host in RACK[:3]:
        argv = [
            "accept", "evaluate", "--cluster", str(EXAMPLE), "--host", host, "--out", str(tmp_path),
            "--observations", str(write_obs(tmp_path, "healthy")), "--fabric", str(fabric),
            "--slurm-state", "drained", "--slurm-reason", "gpucluster accept: awaiting acceptance",
        ]  # fmt: skip
        assert cli_main(argv) == 0
        verdicts[host] = json.loads(capsys.readouterr().out)
    assert verdicts["gpu-a02"]["action"] == "drain"
    assert verdicts["gpu-a02"]["reason"] == (
        "gpucluster accept: nccl_multi_node: expected all_reduce busbw >= 320 GB/s across nodes, "
        "found bad node: every pair with it failed (gpu-a01+gpu-a02, gpu-a02+gpu-a03; peak busbw 179.51 GB/s)"
    )
    assert [verdicts[h]["action"] for h in ("gpu-a01", "gpu-a03")] == ["resume", "resume"]
    report = json.loads((tmp_path / "gpu-a01.json").read_text())
    (multi,) = [c for c in report["checks"] if c["name"] == "nccl_multi_node"]
    assert multi["status"] == "pass" and "its pair with gpu-a02 failed there" in multi["found"]


def test_fabric_plan_on_the_command_line_leaves_out_nodes_without_hcas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = yaml.safe_load(EXAMPLE.read_text())
    cluster["onprem"]["profiles"]["dgx-h100"]["hcas"]["count"] = 0
    path = tmp_path / "nohca.yaml"
    path.write_text(yaml.safe_dump(cluster))
    argv = ["accept", "fabric-plan", "--cluster", str(path), "--hosts", "gpu-a01,gpu-a02"]
    assert cli_main([*argv, "--reservation", "r", "--all-reduce-perf", "/x"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "hosts": [],
        "left_out": {"gpu-a01": "the profile declares no HCAs", "gpu-a02": "the profile declares no HCAs"},
        "runs": [],
    }
    unknown = ["accept", "fabric-plan", "--cluster", str(EXAMPLE), "--hosts", "nope"]
    assert cli_main([*unknown, "--reservation", "r", "--all-reduce-perf", "/x"]) == 2
    assert "host 'nope' is not a node of any rack" in capsys.readouterr().err


def test_on_the_test_rack_two_ranks_per_node_drive_four_gpus_each() -> None:
    data = rack_cluster_file("t", [("ctl", "10.77.0.2"), ("n1", "10.77.0.3"), ("n2", "10.77.0.4")], 8)
    cluster = load_text(yaml.safe_dump(data)).cluster
    (run,) = fabric_plan(cluster, ["n1", "n2"], LAUNCH)["runs"]
    assert "--ntasks-per-node=2" in run["argv"] and run["argv"][-2:] == ["-g", "4"], run["argv"]
