"""Classifiers on small synthetic templates and diffs: fast, no synth."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gpucluster.cli import main
from gpucluster.review.cfn import diff_stacks
from gpucluster.review.classify_cloud import classify_stacks
from gpucluster.review.classify_nodes import classify_files, restart_reasons
from gpucluster.review.nodes import FileChange

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"

BUCKET: dict[str, Any] = {
    "Type": "AWS::S3::Bucket",
    "DeletionPolicy": "Retain",
    "UpdateReplacePolicy": "Retain",
    "Properties": {
        "VersioningConfiguration": {"Status": "Enabled"},
        "BucketEncryption": {
            "ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "k"}}
            ]
        },
    },
}
KEY: dict[str, Any] = {
    "Type": "AWS::KMS::Key",
    "DeletionPolicy": "Retain",
    "Properties": {"EnableKeyRotation": True},
}
ASG: dict[str, Any] = {
    "Type": "AWS::AutoScaling::AutoScalingGroup",
    "Properties": {"MinSize": "0", "MaxSize": "4"},
}
SG: dict[str, Any] = {
    "Type": "AWS::EC2::SecurityGroup",
    "Properties": {"GroupDescription": "nodes", "VpcId": "vpc-1", "SecurityGroupIngress": []},
}


def template(**resources: dict[str, Any]) -> dict[str, Any]:
    """A template with these resources."""
    return {"Resources": copy.deepcopy(resources)}


def kinds_of(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """{kind: [titles]} of the findings for one stack going from old to new."""
    findings = classify_stacks(diff_stacks({"s": old}, {"s": new}, node_modules=NODE_MODULES))
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f.kind, []).append(f.title)
    return out


def test_checkpoint_bucket_renamed_is_replaced_and_flagged_as_data_loss() -> None:
    new = template(CheckpointsBucket=BUCKET, Key=KEY)
    new["Resources"]["CheckpointsBucket"]["Properties"]["BucketName"] = "renamed-checkpoints"
    kinds = kinds_of(template(CheckpointsBucket=BUCKET, Key=KEY), new)
    assert kinds["data-loss"] == ["`s/CheckpointsBucket` (AWS::S3::Bucket) replaced (WILL_REPLACE)"]


def test_key_deleted_and_retain_dropped_are_data_loss() -> None:
    old = template(CheckpointsBucket=BUCKET, Key=KEY)
    new = template(CheckpointsBucket={**BUCKET, "DeletionPolicy": "Delete"})
    titles = kinds_of(old, new)["data-loss"]
    assert any("`s/Key` (AWS::KMS::Key) removed from the stack" in t for t in titles), titles
    assert any("RETAIN removed" in t for t in titles), titles


def test_kms_to_s3_encryption_is_a_security_finding() -> None:
    new = template(CheckpointsBucket=BUCKET)
    sse = new["Resources"]["CheckpointsBucket"]["Properties"]["BucketEncryption"]
    sse["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] = {"SSEAlgorithm": "AES256"}
    kinds = kinds_of(template(CheckpointsBucket=BUCKET), new)
    assert kinds["security"] == [
        "`s/CheckpointsBucket` (AWS::S3::Bucket): KMS encryption removed (now SSE-S3 (AES256))"
    ]
    assert "data-loss" not in kinds


def test_capacity_change_and_new_group() -> None:
    bigger = template(Group={**ASG, "Properties": {"MinSize": "0", "MaxSize": "8"}})
    assert kinds_of(template(Group=ASG), bigger)["replace"] == [
        "`s/Group` (AWS::AutoScaling::AutoScalingGroup) capacity change: MaxSize: 4 → 8"
    ]
    added = kinds_of(template(), template(Group=ASG))
    assert added["replace"] == ["`s/Group` (AWS::AutoScaling::AutoScalingGroup) new capacity: min 0, max 4"]


def test_security_group_opened_to_the_world() -> None:
    opened = template(Nodes=SG)
    opened["Resources"]["Nodes"]["Properties"]["SecurityGroupIngress"] = [
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "0.0.0.0/0"}
    ]
    security = kinds_of(template(Nodes=SG), opened)["security"]
    assert security and "broadened" in security[0]


def test_untouched_stacks_are_left_out() -> None:
    same = template(Group=ASG)
    assert diff_stacks({"s": same}, {"s": copy.deepcopy(same)}, node_modules=NODE_MODULES) == []


def change(path: str, diff: str, hosts: int = 3) -> FileChange:
    """A node-file change received by `hosts` hosts."""
    return FileChange(path, f"/etc/{path}", ["g"], [f"n{i}" for i in range(hosts)], diff)


def test_slurm_conf_partition_vs_node_changes() -> None:
    partition = "--- a\n+++ b\n-PartitionName=x MaxTime=1\n+PartitionName=x MaxTime=2\n"
    nodes = "--- a\n+++ b\n+NodeName=n[5-8] CPUs=4\n"
    assert restart_reasons(partition) == []
    assert restart_reasons(nodes) == ["nodes added or removed"]
    assert restart_reasons("-SelectType=a\n+SelectType=b\n") == ["changed SelectType"]
    kinds = [
        f.kind
        for f in classify_files([change("slurm/slurm.conf", partition), change("slurm/gres.conf", nodes)])
    ]
    assert kinds == ["reconfigure", "slurmd-restart"]


def test_bad_revision_is_bad_input(capsys: Any) -> None:
    assert main(["review", "--base", "no-such-revision-anywhere"]) == 2
    assert "not a commit" in capsys.readouterr().err
