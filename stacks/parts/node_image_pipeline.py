"""Build the node image at deploy time: infrastructure (IMDSv2, private subnet), distribution, image."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_imagebuilder as imagebuilder
from constructs import Construct

BUILD_DATE = "{{ imagebuilder:buildDate }}"  # Image Builder's own placeholder: AMI names are unique


class NodeImagePipeline(Construct):
    """One build per recipe version; the distribution publishes the AMI id to the node-AMI parameter.

    A `CfnImage` (not a scheduled pipeline) builds while the stack deploys, so the parameter holds
    the new AMI before the capacity stack resolves it; a new recipe version replaces the image.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        name: str,
        recipe_arn: str,
        instance_profile_name: str,
        instance_type: str,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        ami_parameter: str,
        tags: dict[str, str],
    ) -> None:
        super().__init__(scope, id_)
        self.infrastructure = imagebuilder.CfnInfrastructureConfiguration(
            self,
            "Infrastructure",
            name=name,
            description="Node image build instance: private subnet, IMDSv2 only, no key pair",
            instance_profile_name=instance_profile_name,
            instance_types=[instance_type],
            subnet_id=subnet.subnet_id,
            security_group_ids=[security_group.security_group_id],
            instance_metadata_options=imagebuilder.CfnInfrastructureConfiguration.InstanceMetadataOptionsProperty(
                http_tokens="required", http_put_response_hop_limit=1
            ),
            terminate_instance_on_failure=True,
            resource_tags=tags,
            tags=tags,
        )
        self.distribution = imagebuilder.CfnDistributionConfiguration(
            self,
            "Distribution",
            name=name,
            description="Publish the node AMI id for the capacity stack's launch templates",
            distributions=[
                imagebuilder.CfnDistributionConfiguration.DistributionProperty(
                    region=cdk.Stack.of(self).region,
                    ami_distribution_configuration={"Name": f"{name}-{BUILD_DATE}", "AmiTags": tags},
                    ssm_parameter_configurations=[
                        imagebuilder.CfnDistributionConfiguration.SsmParameterConfigurationProperty(
                            parameter_name=ami_parameter, data_type="aws:ec2:image"
                        )
                    ],
                )
            ],
            tags=tags,
        )
        self.image = imagebuilder.CfnImage(
            self,
            "Image",
            image_recipe_arn=recipe_arn,
            infrastructure_configuration_arn=self.infrastructure.attr_arn,
            distribution_configuration_arn=self.distribution.attr_arn,
            enhanced_image_metadata_enabled=True,
            image_tests_configuration=imagebuilder.CfnImage.ImageTestsConfigurationProperty(
                image_tests_enabled=True, timeout_minutes=60
            ),
            tags=tags,
        )
