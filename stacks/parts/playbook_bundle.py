"""The playbook bundle: the Ansible collection and the gpucluster sources it needs, as one S3 asset."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

ROOT = Path(__file__).resolve().parents[2]
# Everything at the checkout's root is left out, then what `ansible-playbook` needs is let back in:
# ansible.cfg, the collection (ansible/), and the Python package and templates its plugins import.
# collections/ holds only a symlink to ansible/; the component recreates it on the build instance.
BUNDLE_GLOBS = (
    "*",
    ".*",
    "**/.*",
    "!ansible.cfg",
    "!ansible",
    "!ansible/**",
    "!gpucluster",
    "!gpucluster/**",
    "!templates",
    "!templates/**",
    "**/__pycache__",
    "**/*.pyc",
    "**/tests",
    "**/tests/**",
    "gpucluster/review",
    "gpucluster/review/**",
)


class PlaybookBundle(Construct):
    """A zip of the collection and its Python sources, uploaded by `cdk deploy` and read by the build."""

    def __init__(self, scope: Construct, id_: str, *, root: Path = ROOT) -> None:
        super().__init__(scope, id_)
        self.asset = s3_assets.Asset(
            self,
            "Asset",
            path=str(root),
            exclude=list(BUNDLE_GLOBS),
            ignore_mode=cdk.IgnoreMode.GLOB,
        )
