"""Model defaults, immutability and the cross-field rules on hand-built clusters."""

from __future__ import annotations

import copy
from typing import Any

import pydantic
import pytest
import yaml

from gpucluster.clusterfile import Cluster, ClusterFileError, load_text, node_groups
from gpucluster.clusterfile.catalog.hardware import GPU_MODELS, INSTANCE_TYPES
from gpucluster.clusterfile.efa_layout import interfaces_for, layout_problems, standard_layout
from gpucluster.clusterfile.model.aws import CapacityGroup, EfaInterface
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())


def _load(data: dict[str, Any]) -> Cluster:
    return load_text(yaml.safe_dump(data), "test.yaml").cluster


def _errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ClusterFileError) as caught:
        _load(data)
    return [str(f) for f in caught.value.findings]


def test_defaults_are_secure_and_cgroup_based(example: Cluster) -> None:
    assert example.slurm.plugins.proctrack == "proctrack/cgroup"
    assert example.aws is not None and example.aws.egress is False
    assert example.aws.checkpoint is not None and example.aws.checkpoint.encryption == "kms"
    assert example.aws.capacity[0].efa_layout == "efa-only"


def test_cluster_is_frozen(example: Cluster) -> None:
    with pytest.raises(pydantic.ValidationError):
        example.name = "other"  # type: ignore[misc]


def test_node_groups_expand_ranges_and_cloud_names(example: Cluster) -> None:
    groups = {g.name: g for g in node_groups(example)}
    assert groups["rack-a"].hosts == ("gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04")
    assert str(groups["rack-a"].nodes[3].address) == "10.10.1.14"
    # The spot group mixes p5 (H100) and p5e (H200): each model has its own names, the group one cap.
    spot = groups["p5-spot"]
    assert [(v.gpu.slurm_type, v.hosts[0], v.hosts[-1], v.instance_types) for v in spot.variants] == [
        ("h100", "p5-spot-1", "p5-spot-8", ("p5.48xlarge",)),
        ("h200", "p5-spot-h200-1", "p5-spot-h200-8", ("p5e.48xlarge",)),
    ]
    assert len(spot.hosts) == 16 and spot.max_nodes == 8 and groups["p5-od"].max_nodes == 4
    assert groups["p5-od"].fabric is not None and groups["p5-od"].fabric.kind == "efa"


def test_placement_group_defaults_follow_market() -> None:
    assert CapacityGroup(name="a", instance_type="p5.48xlarge", max_count=1).uses_placement_group
    block = CapacityGroup(name="b", instance_type="p5.48xlarge", max_count=1, market="capacity-block")
    assert not block.uses_placement_group


def test_spot_without_bucket_is_a_warning_not_an_error() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["aws"]["checkpoint"] = None
    loaded = load_text(yaml.safe_dump(data), "w.yaml")
    assert [f.level for f in loaded.warnings] == ["warning"]
    assert "aws.capacity[1].market" in str(loaded.warnings[0])


def test_several_errors_are_reported_together() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["aws"]["availability_zone"] = "eu-west-1a"
    data["slurm"]["controller"] = "nobody"
    messages = _errors(data)
    assert any("aws.availability_zone" in m for m in messages)
    assert any("slurm.controller" in m for m in messages)


def test_standard_p5_layouts_match_aws_documentation() -> None:
    p5 = INSTANCE_TYPES["p5.48xlarge"]
    efa = standard_layout("efa", p5)
    assert [(i.network_card, i.device_index) for i in efa] == [(0, 0)] + [(c, 1) for c in range(1, 32)]
    assert {i.type for i in efa} == {"efa"}
    efa_only = standard_layout("efa-only", p5)
    assert efa_only[0] == EfaInterface(network_card=0, device_index=0, type="interface")
    assert efa_only[1] == EfaInterface(network_card=0, device_index=1, type="efa-only")
    assert len(efa_only) == 33
    assert layout_problems(efa, p5) == [] and layout_problems(efa_only, p5) == []


def test_layout_problems_name_the_card() -> None:
    p5 = INSTANCE_TYPES["p5.48xlarge"]
    layout = [i for i in standard_layout("efa", p5) if i.network_card != 12]
    layout.append(EfaInterface(network_card=40, device_index=1, type="efa"))
    problems = layout_problems(layout, p5)
    assert "network card 12 has no EFA interface (p5.48xlarge has 32)" in problems
    assert any("network card 40 does not exist" in p for p in problems)


def test_efa_only_primary_is_rejected() -> None:
    p4d = INSTANCE_TYPES["p4d.24xlarge"]
    layout = [EfaInterface(network_card=c, device_index=0, type="efa-only") for c in range(4)]
    assert any("cannot be efa-only" in p for p in layout_problems(layout, p4d))


def test_group_without_efa_gets_one_ena_interface() -> None:
    group = CapacityGroup(name="a", instance_type="p5.48xlarge", max_count=1, efa=False)
    assert [i.type for i in interfaces_for(group, INSTANCE_TYPES["p5.48xlarge"])] == ["interface"]


def test_catalog_figures_carry_sources() -> None:
    for itype in INSTANCE_TYPES.values():
        assert itype.price_source.url.startswith("https://") and itype.price_source.date
        assert itype.gpu in GPU_MODELS
        assert itype.max_efa_interfaces <= itype.network_cards
    assert INSTANCE_TYPES["p5.48xlarge"].network_cards == 32
    assert INSTANCE_TYPES["p5en.48xlarge"].max_efa_interfaces == 16
    assert INSTANCE_TYPES["p4d.24xlarge"].gpu_memory_gib == 320


def test_cloud_capacity_with_an_onprem_controller_needs_a_network_path() -> None:
    data = copy.deepcopy(EXAMPLE)
    del data["aws"]["vpn"]
    data["aws"]["onprem_cidrs"] = []
    errors = _errors(data)
    assert any(": aws.vpn: " in e and "head01" in e and "transit_gateway_id" in e for e in errors), errors
    assert any(": aws.onprem_cidrs: " in e for e in errors), errors
    data["aws"]["transit_gateway_id"] = "tgw-0123456789abcdef0"
    data["aws"]["onprem_cidrs"] = ["10.10.0.0/16"]
    assert _load(data).aws is not None


def test_a_cloud_head_node_controller_needs_no_path_to_the_racks() -> None:
    cloud_only = yaml.safe_load((ROOT / "clusters" / "cloud-only.yaml").read_text())
    assert "vpn" not in cloud_only["aws"] and "transit_gateway_id" not in cloud_only["aws"]
    assert _load(cloud_only).aws is not None


def test_an_onprem_controller_with_cloud_capacity_names_its_credentials_anchor() -> None:
    data = copy.deepcopy(EXAMPLE)
    del data["aws"]["controller_access"]
    errors = _errors(data)
    assert any(": aws.controller_access: " in e and "Roles Anywhere" in e for e in errors), errors
    data["aws"]["controller_access"] = {}
    assert any("exactly one trust anchor" in e for e in _errors(data))
    data["aws"]["controller_access"] = {
        "ca_certificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    }
    assert _load(data).aws is not None
