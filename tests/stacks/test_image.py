"""Image stack intent: playbook component from the bundle, encrypted recipe on Ubuntu, IMDSv2 build
instance in the private subnet, the AMI id published to the cluster's parameter, launch templates on it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match

from gpucluster.clusterfile.model.aws import CANONICAL_AMI_PARAMETERS
from gpucluster.names import image_ami_parameter, stack_name
from gpucluster.pins import pin_sources
from stacks.image_stack import pins_version
from stacks.parts.node_image_component import BUILD_TOOLS, PLAYBOOK
from stacks.parts.playbook_bundle import PlaybookBundle
from tests.stacks.conftest import ROOT, Synth, synthesize, variant


def _only(synth: Synth, type_: str) -> dict[str, Any]:
    (resource,) = synth.template("Image").find_resources(type_).values()
    props: dict[str, Any] = resource["Properties"]
    return props


def test_component_fetches_the_bundle_and_runs_the_image_playbook(example_synth: Synth) -> None:
    data = json.dumps(_only(example_synth, "AWS::ImageBuilder::Component")["Data"])
    assert "S3Download" in data and "ExecuteBash" in data
    assert f"ansible-playbook -i localhost, -c local {PLAYBOOK}" in data
    assert PLAYBOOK == "gpucluster.cluster.image"
    # The extra vars are JSON inside the component document inside the template: drop the escapes.
    extra_vars = data.replace("\\", "")
    for source in pin_sources(example_synth.cluster):  # every pin reaches its role variable
        assert f'"{source.variable}": "{source.version}"' in extra_vars, source
    assert '"gpu_nvidia_driver_install_mode": "full"' in extra_vars
    for cluster_state in ("gpucluster_cluster_file", "slurm_common_controller_host", "munge.key"):
        assert cluster_state not in extra_vars


def test_recipe_builds_on_canonical_ubuntu_with_an_encrypted_root(example_synth: Synth) -> None:
    key = example_synth.template("Image").find_resources("AWS::KMS::Key")
    (key_id,) = key
    example_synth.template("Image").has_resource_properties(
        "AWS::ImageBuilder::ImageRecipe",
        {
            "ParentImage": "ssm:" + CANONICAL_AMI_PARAMETERS["ubuntu-22.04"],
            "Version": pins_version(example_synth.cluster),
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/sda1",
                    "Ebs": Match.object_like(
                        {"Encrypted": True, "KmsKeyId": {"Fn::GetAtt": [key_id, "Arn"]}, "VolumeType": "gp3"}
                    ),
                }
            ],
        },
    )


def test_build_instance_requires_imdsv2_in_the_private_subnet(example_synth: Synth) -> None:
    props = _only(example_synth, "AWS::ImageBuilder::InfrastructureConfiguration")
    assert props["InstanceMetadataOptions"]["HttpTokens"] == "required"
    assert "Fn::ImportValue" in json.dumps(props["SubnetId"])  # the network stack's GPU subnet
    assert "KeyPair" not in props
    assert props["TerminateInstanceOnFailure"] is True


def test_distribution_publishes_the_ami_to_the_cluster_parameter(example_synth: Synth) -> None:
    example_synth.template("Image").has_resource_properties(
        "AWS::ImageBuilder::DistributionConfiguration",
        {
            "Distributions": [
                Match.object_like(
                    {
                        "SsmParameterConfigurations": [
                            {"ParameterName": "/gpucluster/example/node-ami", "DataType": "aws:ec2:image"}
                        ]
                    }
                )
            ]
        },
    )
    assert image_ami_parameter("example") == "/gpucluster/example/node-ami"


def test_build_role_reads_only_its_bundle_and_component(example_synth: Synth) -> None:
    (policy,) = example_synth.template("Image").find_resources("AWS::IAM::ManagedPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(s["Action"] for s in statements) == ["imagebuilder:GetComponent", "s3:GetObject"]
    assert all("*" not in json.dumps(s["Resource"]).replace("/*", "") for s in statements), statements
    (role,) = example_synth.template("Image").find_resources("AWS::IAM::Role").values()
    assert "policy/AmazonSSMManagedInstanceCore" in json.dumps(role["Properties"]["ManagedPolicyArns"])


def test_image_deploys_before_capacity(example_synth: Synth) -> None:
    assert example_synth.stacks.image is not None
    assert example_synth.stacks.image.stack_name == stack_name("example", "image")
    assert example_synth.stacks.image in example_synth.stacks.capacity.dependencies  # type: ignore[union-attr]


def test_a_pin_change_is_a_new_recipe_version() -> None:
    base = variant(lambda d: None)
    bumped = variant(lambda d: d.setdefault("versions", {}).update(slurm="24.05.9"))
    assert pins_version(base) != pins_version(bumped)
    assert re.fullmatch(r"580\.[0-9]+\.0", pins_version(base))
    assert all(int(part) < 2**30 for part in pins_version(bumped).split("."))


def test_explicit_ami_id_skips_the_image_stack(tmp_path: Path) -> None:
    cluster = variant(lambda d: d["aws"].update(ami_id="ami-0123456789abcdef0"))
    synth = synthesize(cluster, tmp_path, source="variant.yaml")
    assert "Image" not in synth.templates
    synth.template("Capacity").has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {"LaunchTemplateData": Match.object_like({"ImageId": "ami-0123456789abcdef0"})},
    )


def test_bundle_holds_the_collection_and_sources_but_no_tests(tmp_path: Path) -> None:
    import aws_cdk as cdk

    app = cdk.App(outdir=str(tmp_path))
    PlaybookBundle(cdk.Stack(app, "S"), "Bundle")
    app.synth()
    (staged,) = tmp_path.glob("asset.*")
    top = sorted(p.name for p in staged.iterdir())
    assert top == ["ansible", "ansible.cfg", "gpucluster", "templates"]
    files = [p for p in staged.rglob("*") if p.is_file()]
    assert not [p for p in files if "__pycache__" in p.parts or "tests" in p.parts or "review" in p.parts]
    assert sum(p.stat().st_size for p in files) < 5 * 2**20


def test_build_tools_match_the_project_pins() -> None:
    pins = (ROOT / "requirements.txt").read_text() + (ROOT / "requirements-dev.txt").read_text()
    for tool in BUILD_TOOLS:
        assert re.search(rf"^{re.escape(tool)}$", pins, re.MULTILINE), tool
