"""Classifiers on small synthetic templates and diffs: fast, no synth."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gpucluster.cli import main
from gpucluster.review.cfn import diff_stacks
from gpucluster.review.classify_cloud import classify_stacks
from gpucluster.review.classify_nodes import classify_files
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
TEMPLATE: dict[str, Any] = {
    "Type": "AWS::EC2::LaunchTemplate",
    "Properties": {"LaunchTemplateData": {"InstanceType": "p5.48xlarge", "UserData": "djE="}},
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


def test_a_launch_template_change_affects_new_instances_only() -> None:
    changed = template(Group=TEMPLATE)
    changed["Resources"]["Group"]["Properties"]["LaunchTemplateData"]["UserData"] = "djI="
    kinds = kinds_of(template(Group=TEMPLATE), changed)
    assert kinds == {
        "in-place": [
            "`s/Group` (AWS::EC2::LaunchTemplate) changed: new instances from now on"
            " (running nodes keep theirs until they power down)"
        ]
    }
    added = kinds_of(template(), template(Group=TEMPLATE))
    assert list(added) == ["in-place"] and "created: new instances from now on" in added["in-place"][0]


def test_security_group_opened_to_the_world() -> None:
    opened = template(Nodes=SG)
    opened["Resources"]["Nodes"]["Properties"]["SecurityGroupIngress"] = [
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "0.0.0.0/0"}
    ]
    security = kinds_of(template(Nodes=SG), opened)["security"]
    assert security and "broadened" in security[0]


def test_untouched_stacks_are_left_out() -> None:
    same = template(Group=TEMPLATE)
    assert diff_stacks({"s": same}, {"s": copy.deepcopy(same)}, node_modules=NODE_MODULES) == []


SLURM_CONF = "ClusterName=c\nNodeName=n[1-3] CPUs=4\nPartitionName=x Nodes=n[1-3] MaxTime=1\n"
GRES_CONF = "AutoDetect=off\nNodeName=n[1-3] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"


def change(path: str, old: str, new: str, hosts: int = 3) -> FileChange:
    """A node-file change received by the controller and `hosts` compute nodes."""
    receivers = ["ctl", *(f"n{i}" for i in range(1, hosts + 1))]
    return FileChange(path, f"/etc/{path}", ["g"], receivers, "(diff)", "changed", old, new)


def classified(*changes: FileChange, version: str = "22.05.8") -> dict[str, list[str]]:
    """{kind: hosts} of the findings."""
    findings = classify_files(
        list(changes), slurm_version=version, controller="ctl", slurmd_hosts={"n1", "n2", "n3", "n4"}
    )
    return {f.kind: f.hosts for f in findings}


def test_partition_change_is_reconfigure_only() -> None:
    new = SLURM_CONF.replace("MaxTime=1", "MaxTime=2")
    assert classified(change("slurm/slurm.conf", SLURM_CONF, new)) == {
        "reconfigure": ["ctl", "n1", "n2", "n3"]
    }


def test_node_added_restarts_slurmctld_before_23_11_and_only_reconfigures_from_23_11() -> None:
    added = change("slurm/slurm.conf", SLURM_CONF, SLURM_CONF.replace("n[1-3]", "n[1-4]"))
    old = classified(added, version="22.05.8")
    assert old["slurmctld-restart"] == ["ctl"] and "slurmd-restart" not in old
    assert classified(added, version="23.11.10") == {"reconfigure": ["ctl", "n1", "n2", "n3"]}


def test_restart_key_restarts_slurmctld_on_any_version() -> None:
    new = SLURM_CONF.replace("ClusterName=c", "ClusterName=d")
    assert classified(change("slurm/slurm.conf", SLURM_CONF, new), version="24.05.8")[
        "slurmctld-restart"
    ] == ["ctl"]


def test_gres_conf_restarts_only_nodes_whose_own_lines_changed() -> None:
    grown = change("slurm/gres.conf", GRES_CONF, GRES_CONF.replace("n[1-3]", "n[1-4]"), hosts=4)
    findings = classify_files(
        [grown], slurm_version="22.05.8", controller="ctl", slurmd_hosts={"n1", "n2", "n3", "n4"},
        new_hosts=frozenset({"n4"}),
    )  # fmt: skip
    assert [(f.kind, f.hosts) for f in findings] == [("in-place", ["ctl", "n1", "n2", "n3", "n4"])]
    split = GRES_CONF.replace("n[1-3]", "n[1-2]") + "NodeName=n3 Name=gpu Type=h100 File=/dev/nvidia[0-3]\n"
    assert classified(change("slurm/gres.conf", GRES_CONF, split)) == {"slurmd-restart": ["n3"]}


def test_cgroup_conf_needs_a_drained_slurmd_restart() -> None:
    kinds = classified(change("slurm/cgroup.conf", "ConstrainCores=yes\n", "ConstrainCores=no\n"))
    assert kinds == {"slurmd-restart": ["n1", "n2", "n3"]}  # not the controller: it runs no slurmd


def test_bad_revision_is_bad_input(capsys: Any) -> None:
    assert main(["review", "--base", "no-such-revision-anywhere"]) == 2
    assert "not a commit" in capsys.readouterr().err


RECIPE: dict[str, Any] = {
    "Type": "AWS::ImageBuilder::ImageRecipe",
    "Properties": {"Name": "gpucluster-example-node-recipe-a", "Version": "570.1.0", "ParentImage": "ssm:/p"},
}
NODE_LT: dict[str, Any] = {
    "Type": "AWS::EC2::LaunchTemplate",
    "Properties": {"LaunchTemplateData": {"ImageId": "ami-0123456789abcdef0", "InstanceType": "p5.48xlarge"}},
}


def test_new_recipe_version_is_a_new_ami_for_cloud_nodes() -> None:
    bumped = copy.deepcopy(RECIPE)
    bumped["Properties"]["Version"] = "570.2.0"
    kinds = kinds_of(template(Recipe=RECIPE), template(Recipe=bumped))
    assert kinds["reboot"] == ["`s`: new AMI: rolling replacement of cloud nodes as they power down"]
    assert "replace" not in kinds and "data-loss" not in kinds


def test_explicit_ami_id_change_is_a_new_ami_and_unrelated_edits_are_not() -> None:
    other = copy.deepcopy(NODE_LT)
    other["Properties"]["LaunchTemplateData"]["ImageId"] = "ami-0fedcba9876543210"
    kinds = kinds_of(template(Lt=NODE_LT), template(Lt=other))
    assert any("new AMI: rolling replacement of cloud nodes as they power down" in t for t in kinds["reboot"])
    resized = copy.deepcopy(NODE_LT)
    resized["Properties"]["LaunchTemplateData"]["InstanceType"] = "p5e.48xlarge"
    assert "reboot" not in kinds_of(template(Lt=NODE_LT), template(Lt=resized))
