"""Load one of the collection's filter plugin files the way Ansible does: by path, not as a package."""

from __future__ import annotations

import importlib.util
from typing import Any

from tests.conftest import ROOT


def collection_loader() -> None:
    """Let `ansible_collections.gpucluster.cluster` import, as in ansible-playbook (once per process).

    A plugin file that imports another of the collection's (the plan filters import node_state_filters)
    loads only through Ansible's collection finder; the checkout's collections/ links to ansible/.
    """
    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader([str(ROOT / "collections")])


def filters(file_name: str) -> dict[str, Any]:
    """{filter name: function} of ansible/plugins/filter/<file_name>."""
    collection_loader()
    spec = importlib.util.spec_from_file_location(
        file_name.removesuffix(".py"), ROOT / "ansible/plugins/filter" / file_name
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: dict[str, Any] = module.FilterModule().filters()
    return found
