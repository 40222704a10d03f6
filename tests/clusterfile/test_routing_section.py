"""The routing section: located errors for each rule, on the shipped example with one thing changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpucluster.cli import main
from gpucluster.clusterfile import Cluster, ClusterFileError, load_text
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())


def _errors(change: Any) -> list[str]:
    data = copy.deepcopy(EXAMPLE)
    change(data)
    with pytest.raises(ClusterFileError) as caught:
        load_text(yaml.safe_dump(data, sort_keys=False), "x.yaml")
    return [str(f) for f in caught.value.findings]


def _class(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in data["routing"]["classes"] if c["name"] == name)


def test_the_example_routes_training_experiments_and_evals(example: Cluster) -> None:
    assert example.routing is not None
    routes = {c.name: (c.route, c.after_wait_minutes) for c in example.routing.classes}
    assert routes == {
        "training": ("rack", None),
        "experiment": ("rack_then_cloud", 90),
        "eval": ("spot", None),
    }
    assert example.routing.partitions.cloud == "od" and example.routing.default_class == "training"


def test_rack_then_cloud_needs_a_threshold() -> None:
    errors = _errors(lambda d: _class(d, "experiment").pop("after_wait_minutes"))
    assert len(errors) == 1
    assert errors[0].startswith("x.yaml:")
    assert "routing.classes[1]: Value error, route rack_then_cloud needs after_wait_minutes" in errors[0]


def test_guards_belong_to_rack_then_cloud_only() -> None:
    errors = _errors(lambda d: _class(d, "eval").update(max_cloud_nodes=2))
    assert len(errors) == 1 and "routing.classes[2]: Value error, max_cloud_nodes only apply" in errors[0]
    assert "QOS limit" in errors[0]


def test_an_unknown_route_lists_the_routes() -> None:
    (error,) = _errors(lambda d: _class(d, "eval").update(route="spotty"))
    assert "routing.classes[2].route:" in error and "'rack_then_cloud'" in error


def test_default_class_must_be_declared() -> None:
    (error,) = _errors(lambda d: d["routing"].update(default_class="nightly"))
    line = next(i for i, text in enumerate(yaml.safe_dump(EXAMPLE, sort_keys=False).splitlines(), 1)
                if text.strip().startswith("default_class"))  # fmt: skip
    assert error == (
        f"x.yaml:{line}: routing.default_class: 'nightly' is not a declared class; use one of eval,"
        " experiment, training, or leave it out to leave unrecognised jobs as submitted"
    )


def test_an_account_recognises_one_class() -> None:
    (error,) = _errors(lambda d: _class(d, "eval")["accounts"].append("research"))
    assert "routing.classes[2].accounts[1]: 'research' already recognises class 'experiment'" in error


def test_duplicate_class_names() -> None:
    (error,) = _errors(lambda d: _class(d, "eval").update(name="training"))
    assert "routing.classes[2].name: class 'training' is declared twice" in error


def test_route_partitions_must_exist() -> None:
    (error,) = _errors(lambda d: d["routing"]["partitions"].update(cloud="burst"))
    assert "routing.partitions.cloud: partition 'burst' is not declared in slurm.partitions" in error
    assert "on-demand capacity groups only (p5-od)" in error


def test_a_spot_partition_of_on_demand_capacity_is_blamed_on_the_market() -> None:
    (error,) = _errors(lambda d: d["routing"]["partitions"].update(spot="od"))
    assert "aws.capacity[0].market: p5-od is on-demand capacity in partition 'od', routing's spot" in error
    assert "make it market spot" in error


def test_the_rack_partition_holds_racks_only() -> None:
    errors = _errors(lambda d: d["routing"]["partitions"].update(rack="all"))
    assert [e.split(": ", 2)[1] for e in errors] == [
        "slurm.partitions[2].node_groups[2]",
        "slurm.partitions[2].node_groups[3]",
    ]
    assert "p5-od is on-demand capacity in partition 'all', routing's rack partition" in errors[0]


def test_spot_route_needs_a_spot_partition() -> None:
    (error,) = _errors(lambda d: d["routing"]["partitions"].pop("spot"))
    assert "routing.partitions.spot: a class routes to spot but no spot partition is named" in error


def test_budget_share_needs_a_budget() -> None:
    (error,) = _errors(lambda d: d["aws"].pop("budget"))
    assert "routing.classes[1].budget_share: a budget share needs aws.budget.monthly_limit_usd" in error


def test_a_typo_in_a_market_is_not_reported_twice() -> None:
    # The stand-in replaces the typo with the default (on-demand): the spot partition's rule must not
    # then blame p5-spot for being on-demand.
    errors = _errors(lambda d: d["aws"]["capacity"][1].update(market="spto"))
    assert len(errors) == 1 and "aws.capacity[1].market: Input should be" in errors[0]


def test_validate_exits_2_with_the_located_error(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(EXAMPLE)
    _class(data, "experiment")["after_wait_minutes"] = 0
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "routing.classes[1].after_wait_minutes" in err and "Traceback" not in err


def test_show_prints_each_class_route() -> None:
    from gpucluster.clusterfile import load
    from gpucluster.show import summary

    text = summary(load(ROOT / "clusters" / "example.yaml"))
    assert "Routing (a pass every 60 s; other jobs: training):" in text
    assert (
        "  experiment: rack, then rack,od after 90 min, at most 4 cloud nodes, 50% of the budget"
        " (accounts research)"
    ) in text
    assert "  eval: spot (accounts evals; QOS eval)" in text
    assert "Routing" not in summary(load(ROOT / "clusters" / "cloud-only.yaml"))
