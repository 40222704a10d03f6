"""The node image recipe: the official Ubuntu parent, the playbook component, an encrypted gp3 root."""

from __future__ import annotations

from aws_cdk import aws_imagebuilder as imagebuilder
from constructs import Construct

ROOT_DEVICE = "/dev/sda1"  # root device of Canonical's Ubuntu AMIs (and of our launch templates)


class NodeImageRecipe(Construct):
    """An immutable recipe version; the parent is resolved from SSM when Image Builder builds."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        name: str,
        version: str,
        parent_parameter: str,
        component_arn: str,
        root_volume_gib: int,
        key_arn: str,
        ami_tags: dict[str, str],
    ) -> None:
        super().__init__(scope, id_)
        self.recipe = imagebuilder.CfnImageRecipe(
            self,
            "Recipe",
            name=name,
            version=version,
            # `ssm:` makes Image Builder resolve the parent at build time, not at synth or deploy.
            parent_image=f"ssm:{parent_parameter}",
            description="gpucluster cloud node: the node playbook on the official Ubuntu base",
            components=[
                imagebuilder.CfnImageRecipe.ComponentConfigurationProperty(component_arn=component_arn)
            ],
            block_device_mappings=[
                imagebuilder.CfnImageRecipe.InstanceBlockDeviceMappingProperty(
                    device_name=ROOT_DEVICE,
                    ebs=imagebuilder.CfnImageRecipe.EbsInstanceBlockDeviceSpecificationProperty(
                        encrypted=True,
                        kms_key_id=key_arn,
                        volume_size=root_volume_gib,
                        volume_type="gp3",
                        delete_on_termination=True,
                    ),
                )
            ],
            ami_tags=ami_tags,
            working_directory="/var/tmp",
        )
