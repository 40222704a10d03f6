"""The collection and the package use only ansible-core's public API: no `ansible._internal`, no `_name`.

ansible-core moves and renames its private modules between minor releases (2.19 put the templating engine
under `ansible._internal`); a plugin built on them breaks on the next release, or worse, keeps loading and
does something else. So every Python file of the collection's plugins and of the gpucluster package is
parsed here, and any import of a private ansible module or of a private name from an ansible module fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCANNED = (ROOT / "ansible" / "plugins", ROOT / "gpucluster")


def _python_files() -> list[Path]:
    return sorted(
        path for folder in SCANNED for path in folder.rglob("*.py") if "__pycache__" not in path.parts
    )


def _is_ansible(module: str) -> bool:
    return module == "ansible" or module.startswith("ansible.")


def _private_part(dotted: str) -> str | None:
    """The first private component of a dotted name (`_internal` of `ansible._internal._templating`)."""
    return next((part for part in dotted.split(".") if part.startswith("_")), None)


def private_imports(source: str) -> list[str]:
    """Each import of a private ansible module or name in source, as `line N: what`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if _is_ansible(alias.name) and _private_part(alias.name)
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_ansible(node.module or ""):
            module = node.module or ""
            names = [alias.name for alias in node.names]
            private = names if _private_part(module) else [name for name in names if name.startswith("_")]
            if private:
                found.append(f"line {node.lineno}: from {module} import {', '.join(private)}")
    return found


def test_the_scan_covers_the_plugins_and_the_package() -> None:
    files = _python_files()
    assert ROOT / "ansible/plugins/action/node_state.py" in files
    assert ROOT / "ansible/plugins/inventory/cluster_file.py" in files
    assert any(path.is_relative_to(ROOT / "gpucluster") for path in files)


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_ansible_import(path: Path) -> None:
    found = private_imports(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(ROOT)}: imports ansible-core internals, which change between releases"
        f" without notice ({'; '.join(found)}); use the public API (ansible.plugins.*, ansible.errors,"
        " ansible.template, ansible.module_utils.*)"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ansible._internal._templating._engine import TemplateEngine\n", 1),
        ("import ansible._internal._templating._jinja_bits as bits\n", 1),
        ("from ansible.executor.task_result import _RawTaskResult\n", 1),
        ("def f():\n    from ansible.template import _private, trust_as_template\n", 1),
        (
            "try:\n    from ansible.module_utils._internal import _tb\nexcept ImportError:\n    pass\n",
            1,
        ),
        ("from ansible.template import trust_as_template\nfrom ansible.errors import AnsibleError\n", 0),
        ("from ansible.plugins.action import ActionBase\nimport ansible.constants\n", 0),
        ("from .local import _helper\nfrom ansible_collections.x.y.plugins import _z\n", 0),
        ("from __future__ import annotations\nimport _thread\n", 0),
    ],
)
def test_the_scan_finds_private_imports_wherever_they_are(source: str, expected: int) -> None:
    assert len(private_imports(source)) == expected, private_imports(source)
