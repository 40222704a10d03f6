"""Load one of the collection's filter plugin files the way Ansible does: by path, not as a package."""

from __future__ import annotations

import importlib.util
from typing import Any

from tests.conftest import ROOT


def filters(file_name: str) -> dict[str, Any]:
    """{filter name: function} of ansible/plugins/filter/<file_name>."""
    spec = importlib.util.spec_from_file_location(
        file_name.removesuffix(".py"), ROOT / "ansible/plugins/filter" / file_name
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: dict[str, Any] = module.FilterModule().filters()
    return found
