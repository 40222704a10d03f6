"""Bounds on the work one cluster file can cause, checked before any Python object is built.

A small YAML file can stand for a huge document: each alias (`*name`) repeats its anchor's whole
subtree, so nine lines of nested aliases ("billion laughs") expand to 10⁹ values, and a long run of
`[[[[…` nests deeper than Python's recursion limit. The loader composes the node graph once (cheap:
an alias is a shared node), counts what the graph expands to with one memo per node, and refuses a
file over these bounds with a located finding, before constructing or validating anything.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent

from gpucluster.clusterfile.findings import Finding

MAX_BYTES = 512 * 1024  # the shipped cluster files are 1-4 kB; 1,000 nodes one by one about 60 kB
MAX_DEPTH = 32  # the model nests about 8 levels
MAX_VALUES = 100_000  # values after alias expansion; a 1,000-node file has about 2,000


class LimitError(Exception):
    """A file over one of the bounds; carries the finding that says which and where."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def too_large(size_bytes: int) -> Finding:
    """The finding for a file over MAX_BYTES."""
    return Finding(
        (),
        f"the file is {size_bytes} bytes, over the {MAX_BYTES}-byte limit for a cluster file",
        "this is not a cluster file, or it lists hosts one by one: use node_range patterns",
    )


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses nesting deeper than MAX_DEPTH and records alias uses."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.composed = 0
        self.alias_uses: list[tuple[str, int, yaml.Node]] = []  # (anchor, 1-based line, target)

    def _next_event(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]  # untyped in PyYAML's stubs

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Compose one node, counting depth; an alias is recorded with the line it is used on."""
        if self.check_event(AliasEvent):
            event = self._next_event()
            node = super().compose_node(parent, index)
            if node is not None:
                self.alias_uses.append((str(event.anchor), event.start_mark.line + 1, node))
            return node
        self.depth += 1
        self.composed += 1
        line = self._next_event().start_mark.line + 1
        if self.composed > MAX_VALUES:
            raise LimitError(_too_many(line))
        if self.depth > MAX_DEPTH:
            raise LimitError(
                Finding(
                    (),
                    f"values nest more than {MAX_DEPTH} levels deep",
                    "a cluster file nests about 8 levels; check the brackets and indentation here",
                ).located("", line)
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _too_many(line: int) -> Finding:
    return Finding(
        (),
        f"the document has more than {MAX_VALUES} values",
        "this is not a cluster file, or it lists hosts one by one: use node_range patterns",
    ).located("", line)


def check_expansion(root: yaml.Node, alias_uses: list[tuple[str, int, yaml.Node]]) -> None:
    """Raise LimitError when the document, aliases expanded, is over MAX_VALUES or MAX_DEPTH."""
    seen: dict[int, tuple[int, int]] = {}
    size, height = _expanded(root, seen, 0)
    if size <= MAX_VALUES and height <= MAX_DEPTH:
        return
    if not alias_uses:
        raise LimitError(_too_many(root.start_mark.line + 1))
    anchor, line, node = max(alias_uses, key=lambda use: seen.get(id(use[2]), (1, 1)))
    node_size, node_height = seen.get(id(node), (1, 1))
    if size > MAX_VALUES:
        alone = f"over {MAX_VALUES}" if node_size > MAX_VALUES else str(node_size)
        problem = (
            f"expands to more than {MAX_VALUES} values through aliases (`*{anchor}` alone stands for {alone})"
        )
    else:
        alone = f"over {MAX_DEPTH}" if node_height > MAX_DEPTH else str(node_height)
        problem = f"nests more than {MAX_DEPTH} levels deep through aliases (`*{anchor}` adds {alone})"
    raise LimitError(
        Finding(
            (),
            f"the document {problem}",
            "repeat values with anchors and merge keys (`<<: *base`) one level deep, not aliases of aliases",
        ).located("", line)
    )


def _expanded(node: yaml.Node, seen: dict[int, tuple[int, int]], depth: int) -> tuple[int, int]:
    """(values, levels) node stands for once aliases are expanded, both capped just above the bounds.

    Memoized per node, so the walk is linear in the composed graph, however much aliases repeat it.
    """
    key = id(node)
    if key in seen:
        if seen[key][0] < 0:
            raise LimitError(
                Finding(
                    (), "an alias refers to a value that contains it", "an anchor cannot hold its own alias"
                ).located("", node.start_mark.line + 1)
            )
        return seen[key]
    seen[key] = (-1, -1)  # in progress: meeting it again means a cycle
    size, height = 1, 1
    if depth <= MAX_DEPTH:  # deeper is refused anyway; stop before Python's recursion limit
        for child in _children(node):
            child_size, child_height = _expanded(child, seen, depth + 1)
            size = min(size + child_size, MAX_VALUES + 1)
            height = max(height, child_height + 1)
    else:
        height = MAX_DEPTH + 1
    seen[key] = (size, height)
    return size, height


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
