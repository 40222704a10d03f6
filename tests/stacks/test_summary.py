"""The demo summary reads cdk.out and reports stacks, resources, instances and GPUs per group."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpucluster.clusterfile.catalog.hardware import INSTANCE_TYPES
from stacks.summary import groups, main, render_summary, stacks
from tests.stacks.conftest import Synth


def test_summary_lists_every_stack_and_group(example_synth: Synth) -> None:
    aws = example_synth.cluster.aws
    assert aws is not None
    text = render_summary(example_synth.outdir)
    assert set(stacks(example_synth.outdir)) == {s.stack_name for s in example_synth.stacks.all()}
    for stack in example_synth.stacks.all():
        assert stack.stack_name in text
    found = {g.name: g for g in groups(example_synth.templates["Capacity"])}
    assert set(found) == {g.name for g in aws.capacity}
    for group in aws.capacity:
        summary = found[group.name]
        assert summary.market == group.market
        assert summary.instance_types == [group.instance_type, *group.fallback_instance_types]
        assert (summary.min_count, summary.max_count) == (group.min_count, group.max_count)
        assert summary.max_gpus == group.max_count * INSTANCE_TYPES[group.instance_type].gpu_count
    total = sum(g.max_count * INSTANCE_TYPES[g.instance_type].gpu_count for g in aws.capacity)
    assert f"{total} GPUs" in text


def test_summary_of_capacity_blocks_and_head_node(synth_file: Callable[[str], Synth]) -> None:
    synth = synth_file("cloud-only")
    assert synth.cluster.aws is not None
    markets = {g.market for g in groups(synth.templates["Capacity"])}
    assert markets == {g.market for g in synth.cluster.aws.capacity}
    assert "+ instance m7i.2xlarge" in render_summary(synth.outdir)


def test_summary_without_assembly_exits_2(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 2
