"""Parse YAML once into a node tree, keeping the line of every field path; reject duplicate keys."""

from __future__ import annotations

from typing import Any

import yaml

from gpucluster.clusterfile.findings import Finding, Path


class _Loader(yaml.SafeLoader):
    """SafeLoader used for composing and constructing one document."""


def parse(text: str) -> tuple[Any, dict[Path, int], list[Finding]]:
    """Return (data, {path: 1-based line}, duplicate-key findings) or raise yaml.YAMLError."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, []
        lines: dict[Path, int] = {(): node.start_mark.line + 1}
        duplicates: list[Finding] = []
        _walk(node, (), lines, duplicates)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    return data, lines, duplicates


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], dups: list[Finding]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = (*path, key)
            if key in seen:
                dups.append(
                    Finding(
                        child,
                        "key appears twice in the same mapping",
                        "keep one; YAML would silently drop the first",
                    ).located("", key_node.start_mark.line + 1)
                )
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _walk(value_node, child, lines, dups)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, dups)


def line_of(path: Path, lines: dict[Path, int]) -> int:
    """Line of the deepest existing prefix of path (a missing field points at its parent)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1
