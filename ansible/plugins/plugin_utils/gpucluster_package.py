"""The gpucluster Python package for the controller-side plugins: import it, or say how to install it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from ansible.errors import AnsibleError


def checkout_root() -> Path | None:
    """The gpucluster checkout this collection runs from, or None for an installed collection.

    In a checkout this file is <root>/ansible/plugins/plugin_utils/ (reached through the collections/ link,
    which resolve() follows) next to the package, <root>/gpucluster/. Installed, three levels up is an
    ansible_collections/<namespace>/ folder with no package in it.
    """
    root = Path(__file__).resolve().parents[3]
    return root if (root / "gpucluster" / "__init__.py").is_file() else None


def require_gpucluster(plugin: str, error: type[AnsibleError] = AnsibleError) -> None:
    """Make `import gpucluster` work, from the running Python or a checkout; raise `error` if neither can.

    The plugins run on the controller, in the Python that runs Ansible (sys.executable), so that is where
    the package must be installed, not on the nodes.
    """
    try:
        importlib.import_module("gpucluster")
        return
    except ImportError as exc:
        cause = exc
    root = checkout_root()
    if root is not None:
        sys.path.insert(0, str(root))
        try:
            importlib.import_module("gpucluster")
            return
        except ImportError as exc:
            cause = exc
    raise error(
        f"{plugin}: the Python that runs Ansible, {sys.executable}, cannot import the gpucluster package"
        f" ({cause}); install it there: {sys.executable} -m pip install gpucluster"
    )
