"""The synth cache: keyed by a hash of every input, reused without running the CDK."""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster.review.synth import STAMP, inputs_hash, synth


def tree(root: Path) -> Path:
    """A minimal tree with a cluster file and one file per input folder."""
    for name, text in {
        "clusters/x.yaml": "name: x\n",
        "app.py": "app\n",
        "stacks/a.py": "a\n",
        "templates/slurm/slurm.conf.j2": "t\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_hash_follows_inputs_not_bytecode(tmp_path: Path) -> None:
    root = tree(tmp_path)
    first = inputs_hash(root, "clusters/x.yaml")
    (root / "stacks" / "__pycache__").mkdir()
    (root / "stacks" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert inputs_hash(root, "clusters/x.yaml") == first
    (root / "templates" / "slurm" / "slurm.conf.j2").write_text("changed\n")
    assert inputs_hash(root, "clusters/x.yaml") != first


def test_completed_out_dir_is_reused_without_the_cdk(tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    cache = tmp_path / "cache"
    out = cache / inputs_hash(root, "clusters/x.yaml")
    out.mkdir(parents=True)
    props = {"templateFile": "N.json", "stackName": "gpucluster-x-network"}
    manifest = {"artifacts": {"N": {"type": "aws:cloudformation:stack", "properties": props}}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "N.json").write_text('{"Resources": {}}')
    (out / STAMP).write_text("clusters/x.yaml\n")
    result = synth(root, "clusters/x.yaml", cache_dir=cache)
    assert result.reused and result.templates == {"gpucluster-x-network": {"Resources": {}}}


def test_the_review_code_is_no_synth_input(tmp_path: Path) -> None:
    root = tree(tmp_path)
    first = inputs_hash(root, "clusters/x.yaml")
    (root / "gpucluster" / "review").mkdir(parents=True)
    (root / "gpucluster" / "review" / "report.py").write_text("x\n")
    assert inputs_hash(root, "clusters/x.yaml") == first
    (root / "gpucluster" / "render.py").write_text("x\n")
    assert inputs_hash(root, "clusters/x.yaml") != first
