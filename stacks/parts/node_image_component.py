"""The Image Builder component that fetches the playbook bundle and runs the image playbook locally."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_imagebuilder as imagebuilder
from constructs import Construct

PLAYBOOK = "gpucluster.cluster.image"  # ansible/playbooks/image.yml
WORKDIR = "/opt/gpucluster-image"
# Only the build tools live in this virtual environment; it is removed before the snapshot. The same
# pins as requirements.txt / requirements-dev.txt (tests/stacks/test_image.py holds them equal).
BUILD_TOOLS = ("ansible-core==2.19.14", "pydantic==2.14.4", "PyYAML==6.0.4", "Jinja2==3.1.6")
# gpucluster needs Python >= 3.11: Ubuntu 22.04 has it as python3.11 (universe), 24.04 as its python3.
BUILD_PYTHON = {"ubuntu-22.04": "python3.11", "ubuntu-24.04": "python3.12"}


def build_commands(*, python: str, extra_vars: dict[str, Any]) -> list[str]:
    """Shell lines of the build phase: tools, bundle, collection link, playbook, clean-up."""
    venv = f"{WORKDIR}/venv"
    return [
        "set -euo pipefail",
        "export DEBIAN_FRONTEND=noninteractive",
        f"apt-get update -q && apt-get install -y -q {python} {python}-venv unzip",
        f"{python} -m venv {venv}",
        f"{venv}/bin/pip install --no-cache-dir --quiet {' '.join(BUILD_TOOLS)}",
        f"cd {WORKDIR} && unzip -q -o bundle.zip -d bundle",
        f"mkdir -p {WORKDIR}/bundle/collections/ansible_collections/gpucluster",
        f"ln -sfn ../../../ansible {WORKDIR}/bundle/collections/ansible_collections/gpucluster/cluster",
        (
            f"cd {WORKDIR}/bundle && PATH={venv}/bin:$PATH PYTHONPATH={WORKDIR}/bundle "
            f"ANSIBLE_CONFIG={WORKDIR}/bundle/ansible.cfg ansible-playbook -i localhost, -c local "
            f"{PLAYBOOK} -e '{json.dumps(extra_vars, sort_keys=True)}'"
        ),
        f"rm -rf {WORKDIR}",
    ]


def document(*, bundle_url: str, python: str, extra_vars: dict[str, Any]) -> dict[str, Any]:
    """The AWSTOE document: download the bundle (S3Download), then run the playbook (ExecuteBash)."""
    return {
        "name": "gpucluster-node-playbook",
        "description": f"Run {PLAYBOOK} from the playbook bundle on this instance",
        "schemaVersion": 1.0,
        "phases": [
            {
                "name": "build",
                "steps": [
                    {
                        "name": "FetchBundle",
                        "action": "S3Download",
                        "inputs": [{"source": bundle_url, "destination": f"{WORKDIR}/bundle.zip"}],
                    },
                    {
                        "name": "RunPlaybook",
                        "action": "ExecuteBash",
                        "inputs": {"commands": build_commands(python=python, extra_vars=extra_vars)},
                    },
                ],
            }
        ],
    }


class NodeImageComponent(Construct):
    """One component version per bundle and pins; its name carries the bundle hash so it never collides."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        name: str,
        version: str,
        bundle_url: str,
        python: str,
        extra_vars: dict[str, Any],
        key_arn: str,
    ) -> None:
        super().__init__(scope, id_)
        doc = document(bundle_url=bundle_url, python=python, extra_vars=extra_vars)
        data = cdk.Stack.of(self).to_json_string(doc)
        self.component = imagebuilder.CfnComponent(
            self,
            "Component",
            name=name,
            version=version,
            platform="Linux",
            description="Fetches the gpucluster playbook bundle and runs the image playbook locally",
            change_description="Pinned versions or playbook bundle changed",
            data=data,
            kms_key_id=key_arn,
        )
