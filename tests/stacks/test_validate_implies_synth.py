"""Property: for each shipped cluster file and each mutation, `gpucluster validate` exit 0 ⇒ synth succeeds.

Synth runs in-process (the same `build` + `add_checks` + `app.synth()` as app.py, cdk-nag and our rule
pack included), so a few dozen variants take well under a minute. A mutation that validate rejects
needs no synth; the test also checks that the set is not vacuous (some pass, some are rejected).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster import cli, exit_codes
from gpucluster.clusterfile import load
from tests.stacks.conftest import CLUSTER_FILES, ValidationFailedError, synthesize

Doc = dict[str, Any]
Mutation = Callable[[Doc], None]
AWS_FILES = [p for p in CLUSTER_FILES if load(p).cluster.aws is not None]


def _groups(doc: Doc) -> list[Doc]:
    groups: list[Doc] = doc["aws"]["capacity"]
    return groups


def _each_group(**changes: Any) -> Mutation:
    def edit(doc: Doc) -> None:
        for group in _groups(doc):
            group.update(changes)

    return edit


def _fallback(*types: str, **extra: Any) -> Mutation:
    """Fallback types on every group that is not a capacity block (which takes exactly one type)."""

    def edit(doc: Doc) -> None:
        for group in _groups(doc):
            if group.get("market") != "capacity-block":
                group.update(fallback_instance_types=list(types), **extra)

    return edit


def _primary(itype: str) -> Mutation:
    return _each_group(instance_type=itype)


def _aws(**changes: Any) -> Mutation:
    def edit(doc: Doc) -> None:
        doc["aws"].update(changes)

    return edit


def _cards(count: int, layout: str = "efa-only") -> Mutation:
    """An explicit layout on every group: `count` cards, one EFA interface each."""
    interfaces = (
        [{"network_card": 0, "device_index": 0, "type": "interface"}]
        if layout == "efa-only"
        else [{"network_card": 0, "device_index": 0, "type": "efa"}]
    )
    first = "efa-only" if layout == "efa-only" else "efa"
    interfaces += [{"network_card": 0, "device_index": 1, "type": first}] if layout == "efa-only" else []
    interfaces += [{"network_card": c, "device_index": 1, "type": first} for c in range(1, count)]
    return _each_group(efa_interfaces=interfaces)


def _vpc(cidr: str, **extra: Any) -> Mutation:
    """A VPC CIDR (and more aws settings); a head node keeps a usable address of its GPU subnet."""

    def edit(doc: Doc) -> None:
        doc["aws"].update(vpc_cidr=cidr, **extra)
        if doc["aws"].get("head_node"):
            doc["aws"]["head_node"]["address"] = str(ip_network(cidr).network_address + 10)

    return edit


def _head_address(address: str) -> Mutation:
    def edit(doc: Doc) -> None:
        if doc["aws"].get("head_node"):
            doc["aws"]["head_node"]["address"] = address
        else:
            doc["aws"]["head_node"] = {"name": "cloudhead", "address": address}

    return edit


def _both(*mutations: Mutation) -> Mutation:
    def edit(doc: Doc) -> None:
        for mutation in mutations:
            mutation(doc)

    return edit


MUTATIONS: dict[str, Mutation] = {
    "as-shipped": lambda doc: None,
    "fallback-p5en": _fallback("p5en.48xlarge"),
    "fallback-p5e": _fallback("p5e.48xlarge"),
    "fallback-p5e-mixed": _fallback("p5e.48xlarge", mixed_gpus=True),
    "fallback-p5en-mixed": _fallback("p5en.48xlarge", mixed_gpus=True),
    "fallback-p5": _fallback("p5.48xlarge"),
    "fallback-p4d": _fallback("p4d.24xlarge"),
    "fallback-p4de-mixed": _fallback("p4de.24xlarge", mixed_gpus=True),
    "fallback-p5en-efa": _both(_fallback("p5en.48xlarge", mixed_gpus=True), _each_group(efa_layout="efa")),
    "primary-p5en": _primary("p5en.48xlarge"),
    "primary-p5en-fallback-p5e": _both(_primary("p5en.48xlarge"), _fallback("p5e.48xlarge")),
    "primary-p4d": _primary("p4d.24xlarge"),
    "primary-p4de-fallback-p4d": _both(_primary("p4de.24xlarge"), _fallback("p4d.24xlarge")),
    "efa-layout-efa": _each_group(efa_layout="efa"),
    "no-efa": _each_group(efa=False),
    "no-efa-no-placement": _each_group(efa=False, placement_group=False),
    "cards-32": _cards(32),
    "cards-16": _cards(16),
    "cards-16-efa": _cards(16, "efa"),
    "cards-4": _cards(4),
    "cards-33": _cards(33),
    "placement-false": _each_group(placement_group=False),
    "placement-true": _each_group(placement_group=True),
    "spot-everywhere": _each_group(market="spot", capacity_reservation_id=None),
    "vpc-8": _vpc("10.0.0.0/8"),
    "vpc-20": _vpc("10.100.0.0/20"),
    "vpc-24": _vpc("10.100.0.0/24"),
    "vpc-26": _vpc("10.100.0.0/26"),
    "vpc-27": _vpc("10.100.0.0/27"),
    "vpc-28": _vpc("10.100.0.0/28"),
    "vpc-26-egress": _vpc("10.100.0.0/26", egress=True),
    "vpc-27-egress": _vpc("10.100.0.0/27", egress=True),
    "vpc-27-ami": _vpc("10.100.0.0/27", ami_id="ami-0123456789abcdef0", image=None),
    "egress": _aws(egress=True),
    "ami": _aws(ami_id="ami-0123456789abcdef0", image=None),
    "head-low": _both(_vpc("10.100.0.0/16"), _head_address("10.100.0.2")),
    "head-upper-half": _both(_vpc("10.100.0.0/16"), _head_address("10.100.200.10")),
    "head-ok": _both(_vpc("10.100.0.0/16"), _head_address("10.100.0.10")),
    "onprem-overlap": _aws(onprem_cidrs=["10.100.0.0/24"]),
    "no-checkpoint": _aws(checkpoint=None),
    "big-group": _each_group(max_count=64),
    "root-small": _each_group(root_volume_gib=100),
}


def _validate(document: Doc, path: Path) -> int:
    """`gpucluster validate FILE` in-process: its exit status."""
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(["validate", str(path)])


def _outcomes(path: Path, tmp: Path) -> dict[str, tuple[int, str]]:
    """Per mutation: validate's status and, when it passed, synth's failure ('' for success)."""
    base = yaml.safe_load(path.read_text(encoding="utf-8"))
    outcomes: dict[str, tuple[int, str]] = {}
    for name, mutate in MUTATIONS.items():
        document = yaml.safe_load(yaml.safe_dump(base))
        mutate(document)
        file = tmp / f"{path.stem}-{name}.yaml"
        status = _validate(document, file)
        failure = ""
        if status == exit_codes.OK:
            try:
                synthesize(load(file).cluster, tmp / name, source=str(file))
            except (ValidationFailedError, RuntimeError) as exc:
                failure = str(exc)[:600] or type(exc).__name__
        outcomes[name] = (status, failure)
    return outcomes


@pytest.mark.parametrize("path", AWS_FILES, ids=[p.stem for p in AWS_FILES])
def test_validate_ok_implies_synth_ok(path: Path, tmp_path: Path) -> None:
    outcomes = _outcomes(path, tmp_path)
    broken = {name: failure for name, (status, failure) in outcomes.items() if status == 0 and failure}
    assert broken == {}, "validate said ok but synth failed"
    accepted = {name for name, (status, _) in outcomes.items() if status == exit_codes.OK}
    rejected = {name for name, (status, _) in outcomes.items() if status == exit_codes.BAD_INPUT}
    assert accepted | rejected == set(MUTATIONS), "validate exited neither 0 nor 2"
    assert {"as-shipped", "fallback-p5e-mixed", "fallback-p5", "egress", "vpc-26"} <= accepted
    assert {"fallback-p5en", "fallback-p5e", "fallback-p4d", "vpc-8", "vpc-28", "cards-4"} <= rejected
