"""The cloud node image on the test rack: a node's root after playbooks/image.yml, kept as an overlay layer.

`save` keeps what the image playbook changed on a stopped node (its overlay's upper directory) on top of
the rack's base image; emulated cloud instances boot from `layer` over `base` (lowerdir=layer:base), and
`view` mounts the two read-only to inspect the image as a node launched from it would see its disk.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpucluster_rack import ROOT
from gpucluster_rack.image import ensure_image
from gpucluster_rack.node import Node
from gpucluster_rack.rack import Rack
from gpucluster_rack.sh import run

IMAGE_ROOT = Path("/var/lib/gpucluster-rack-images/cloud-node")


@dataclass(frozen=True)
class CloudImage:
    """A saved cloud node image: its own layer, the base image under it, what built it."""

    root: Path

    @property
    def layer(self) -> Path:
        """What the image playbook changed, as an overlay layer (whiteouts included)."""
        return self.root / "layer"

    @property
    def base(self) -> Path:
        """The rack's base image the layer sits on."""
        return Path((self.root / "base").read_text().strip())

    @property
    def manifest(self) -> dict[str, object]:
        """The variables the image was built with (its pins)."""
        loaded: dict[str, object] = json.loads((self.root / "manifest.json").read_text())
        return loaded

    def lowerdir(self) -> str:
        """The overlay lowerdir option for a node booted from this image."""
        return f"{self.layer}:{self.base}"


def build(rack: Rack, node: str, variables: dict[str, object], *extra: str) -> tuple[int, str]:
    """Run the image playbook on one rack node, as EC2 Image Builder runs it (an inventory of one host)."""
    extra_vars = rack.state / "image-vars.json"
    extra_vars.write_text(json.dumps({**variables, "gpucluster_image_hosts": node}))
    return rack.in_bridge(
        [
            str(ROOT / ".venv/bin/ansible-playbook"),
            "-i",
            f"{node},",
            str(ROOT / "ansible/playbooks/image.yml"),
            "-e",
            f"@{extra_vars}",
            *extra,
        ],
        env={**rack.ansible_env(), "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
    )


def save(node: Node, image_vars: dict[str, object], root: Path = IMAGE_ROOT) -> CloudImage:
    """Keep a stopped node's changes as the cloud node image (replacing an older one)."""
    partial = root.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    run(["cp", "-a", str(node.state / "upper"), str(partial / "layer")])
    (partial / "base").write_text(f"{ensure_image()}\n")
    (partial / "manifest.json").write_text(json.dumps(image_vars, indent=2, sort_keys=True))
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return CloudImage(root)


@contextlib.contextmanager
def view(image: CloudImage) -> Iterator[Path]:
    """The image's root file system, mounted read-only for the duration."""
    mountpoint = Path(tempfile.mkdtemp(prefix="gpucluster-cloud-image-"))
    run(["mount", "-t", "overlay", "overlay", "-o", f"ro,lowerdir={image.lowerdir()}", str(mountpoint)])
    try:
        yield mountpoint
    finally:
        run(["umount", str(mountpoint)], check=False)
        mountpoint.rmdir()
