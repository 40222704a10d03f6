"""A capacity group's Slurm line is true for every type it may launch; its EFA layout fits every type."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpucluster.clusterfile import ClusterFileError, Loaded, load_text
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
SPOT = 1  # aws.capacity[1]: p5-spot, p5.48xlarge (H100)


def _with_spot(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    data["aws"]["capacity"][SPOT].pop("mixed_gpus", None)
    data["aws"]["capacity"][SPOT].update(changes)
    return data


def _load(data: dict[str, Any]) -> Loaded:
    return load_text(yaml.safe_dump(data, sort_keys=False), "clusters/x.yaml")


def _errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ClusterFileError) as caught:
        _load(data)
    return [str(f) for f in caught.value.findings]


def test_fallback_of_another_gpu_model_is_a_located_error() -> None:
    data = _with_spot(fallback_instance_types=["p5e.48xlarge"])
    text = yaml.safe_dump(data, sort_keys=False)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "p5e.48xlarge" in t and "fallback" not in t)
    (error,) = _errors(data)
    assert error.startswith(f"clusters/x.yaml:{line}: aws.capacity[1].fallback_instance_types[0]: ")
    assert "GPU model NVIDIA H200 (not NVIDIA H100 80GB HBM3)" in error
    assert "GPU memory 141 GiB (not 80 GiB)" in error
    assert "gpu:h100:8" in error
    assert "its own capacity group" in error and "mixed_gpus: true" in error


def test_fallback_with_the_same_gpu_and_host_is_accepted() -> None:
    assert _load(_with_spot(fallback_instance_types=["p5.48xlarge"])).cluster.aws is not None


def test_declared_mix_accepts_another_gpu_model_but_not_another_host() -> None:
    assert _load(_with_spot(fallback_instance_types=["p5e.48xlarge"], mixed_gpus=True)).warnings == []
    (error, *_rest) = _errors(_with_spot(fallback_instance_types=["p4de.24xlarge"], mixed_gpus=True))
    assert "aws.capacity[1].fallback_instance_types[0]" in error
    assert "sockets" not in error and "cores per socket 24 (not 48)" in error
    assert "memory 1152 GiB (not 2048 GiB)" in error


def test_a_mixed_groups_model_names_may_not_collide_with_another_group() -> None:
    data = _with_spot(fallback_instance_types=["p5e.48xlarge"], mixed_gpus=True)
    data["aws"]["capacity"].append({"name": "p5-spot-h200", "instance_type": "p5e.48xlarge", "max_count": 2})
    data["slurm"]["partitions"][-1]["node_groups"].append("p5-spot-h200")
    errors = _errors(data)
    assert any("p5-spot-h200-1" in error and "aws.capacity[" in error for error in errors), errors


def test_needless_mix_is_a_warning() -> None:
    loaded = _load(_with_spot(fallback_instance_types=["p5.48xlarge"], mixed_gpus=True))
    assert [str(w).split(": ", 2)[1] for w in loaded.warnings] == ["warning"]
    assert "aws.capacity[1].mixed_gpus" in str(loaded.warnings[0])


def test_fallback_with_fewer_network_cards_is_rejected_before_synth() -> None:
    # p5en.48xlarge carries the same H200s as p5e but has 16 network cards, not 32.
    data = copy.deepcopy(EXAMPLE)
    data["aws"]["capacity"][SPOT].update(
        instance_type="p5e.48xlarge", fallback_instance_types=["p5en.48xlarge"]
    )
    data["aws"]["capacity"][SPOT].pop("mixed_gpus")
    (error,) = _errors(data)
    assert "aws.capacity[1].fallback_instance_types[0]" in error
    assert "laid out for p5e.48xlarge (32 network cards)" in error
    assert "network card 16 does not exist on p5en.48xlarge (cards 0–15) (and 15 more)" in error


@pytest.mark.parametrize(
    ("cidr", "egress", "message"),
    [
        ("10.100.0.0/28", False, "must be /16 to /27"),
        (
            "10.100.0.0/27",
            False,
            "room for 1 /28 subnet(s) beside the GPU subnet, but needs 2 (nat, image-build)",
        ),
    ],
)
def test_vpc_too_small_for_its_subnets_is_rejected(cidr: str, egress: bool, message: str) -> None:
    data = copy.deepcopy(EXAMPLE)
    data["aws"].update(vpc_cidr=cidr, egress=egress, onprem_cidrs=["10.10.0.0/16"])
    errors = _errors(data)
    assert any("aws.vpc_cidr" in e and message in e for e in errors), errors


def test_vpc_of_a_27_fits_with_egress() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["aws"].update(vpc_cidr="10.100.0.0/27", egress=True)
    assert _load(data).cluster.aws is not None
