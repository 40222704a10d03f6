"""Parse YAML once into a node tree, keeping the line of every field path; reject duplicate keys."""

from __future__ import annotations

from typing import Any

import yaml

from gpucluster.clusterfile.findings import Finding, Path
from gpucluster.clusterfile.yaml_limits import (
    MAX_BYTES,
    BoundedLoader,
    LimitError,
    check_expansion,
    too_large,
)


class _Loader(BoundedLoader):
    """Bounded SafeLoader used for composing and constructing one document."""

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        """A date as SafeLoader reads it; an impossible one (2025-13-01) is a located YAML error."""
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a valid date ({exc})", node.start_mark
            ) from None


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def parse(text: str) -> tuple[Any, dict[Path, int], list[Finding]]:
    """Return (data, {path: 1-based line}, duplicate-key findings).

    Raise yaml.YAMLError for YAML that does not parse and LimitError for a file over the bounds of
    yaml_limits (size, nesting, values after alias expansion), before any Python object is built.
    """
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise LimitError(too_large(len(text.encode("utf-8", errors="replace"))).located("", 1))
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, []
        check_expansion(node, loader.alias_uses)
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
