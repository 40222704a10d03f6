"""Every shipped cluster file synthesizes with cdk-nag (both packs) and our rule pack clean."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpucluster.clusterfile import Cluster, ClusterFileError, load
from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from gpucluster.clusterfile.efa_layout import standard_layout
from gpucluster.clusterfile.model.aws import CapacityGroup
from stacks.nag.plugin import findings
from tests.stacks.conftest import CLUSTER_FILES, ROOT, Synth, ValidationFailedError, synthesize, variant


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=[p.stem for p in CLUSTER_FILES])
def test_shipped_cluster_synthesizes_clean(path: Path, synth_file: Callable[[str], Synth]) -> None:
    synth = synth_file(path.stem)  # raises ValidationFailedError listing any unacknowledged finding
    assert synth.templates
    for stack_id, template in synth.templates.items():
        assert findings(template) == [], stack_id


def test_cluster_without_aws_gets_only_the_placeholder(synth_file: Callable[[str], Synth]) -> None:
    onprem = [p for p in CLUSTER_FILES if load(p).cluster.aws is None]
    assert onprem, "expected a shipped on-prem-only cluster file"
    synth = synth_file(onprem[0].stem)
    assert list(synth.templates) == ["NoCloud"]
    resources = synth.templates["NoCloud"]["Resources"]
    assert {r["Type"] for r in resources.values()} <= {
        "AWS::CloudFormation::WaitConditionHandle",
        "AWS::CDK::Metadata",
    }


def test_stacks_are_region_bound_and_account_agnostic(example_synth: Synth) -> None:
    assert example_synth.cluster.aws is not None
    for stack in example_synth.stacks.all():
        assert stack.region == example_synth.cluster.aws.region
        assert stack.stack_name.startswith(f"gpucluster-{example_synth.cluster.name}-")
    manifest = (example_synth.outdir / "manifest.json").read_text()
    assert '"missing"' not in manifest  # no context look-up was requested


def _bypass_model(cluster: Cluster, **changes: Any) -> Cluster:
    """The cluster with its first capacity group changed WITHOUT validation (as a hand edit could)."""
    assert cluster.aws is not None
    group: CapacityGroup = cluster.aws.capacity[0].model_copy(update=changes)
    aws = cluster.aws.model_copy(update={"capacity": [group, *cluster.aws.capacity[1:]]})
    return cluster.model_copy(update={"aws": aws})


def test_rule_pack_rejects_a_missing_card_at_synth(tmp_path: Path, example_synth: Synth) -> None:
    layout = [i for i in standard_layout("efa-only", INSTANCE_TYPES["p5.48xlarge"]) if i.network_card != 7]
    cluster = _bypass_model(example_synth.cluster, efa_interfaces=layout)
    with pytest.raises(
        ValidationFailedError, match=r"GpuCluster-EfaLayout.*network card 7 has no EFA interface"
    ):
        synthesize(cluster, tmp_path, source="clusters/example.yaml")


def test_rule_pack_rejects_a_capacity_block_with_a_placement_group(
    tmp_path: Path, example_synth: Synth
) -> None:
    cluster = _bypass_model(
        example_synth.cluster,
        market="capacity-block",
        capacity_reservation_id="cr-0123456789abcdef0",
        placement_group=True,
        fallback_instance_types=[],
    )
    with pytest.raises(
        ValidationFailedError, match=r"GpuCluster-EfaPlacement.*capacity block with a placement group"
    ):
        synthesize(cluster, tmp_path, source="clusters/example.yaml")


def test_model_rejects_the_same_mistakes_with_the_card_and_rule() -> None:
    layout = [
        {"network_card": i.network_card, "device_index": i.device_index, "type": i.type}
        for i in standard_layout("efa-only", INSTANCE_TYPES["p5.48xlarge"])
        if i.network_card != 7
    ]

    def missing_card(doc: dict[str, Any]) -> None:
        doc["aws"]["capacity"][0]["efa_interfaces"] = layout

    def block_with_pg(doc: dict[str, Any]) -> None:
        doc["aws"]["capacity"][0].update(
            market="capacity-block", capacity_reservation_id="cr-0123456789abcdef0", placement_group=True
        )

    with pytest.raises(ClusterFileError, match="network card 7 has no EFA interface"):
        variant(missing_card)
    with pytest.raises(ClusterFileError, match="capacity blocks must not use a placement group"):
        variant(block_with_pg)


def test_app_exits_2_with_the_loader_message_on_a_bad_file(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "clusters" / "example.yaml").read_text().replace("max_count: 4", "max_count: 0"))
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env={
            "PATH": f"{ROOT / 'node_modules' / '.bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "CDK_CONTEXT_JSON": json.dumps({"cluster": str(bad)}),
            "CDK_OUTDIR": str(tmp_path / "o"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "max_count" in result.stderr
    assert "Traceback" not in result.stderr
