"""Turn pydantic validation errors into findings with the cluster file's own field paths."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from gpucluster.clusterfile.findings import Finding, Path

_HINTS = {
    "missing": "add this field (see `gpucluster schema`)",
    "literal_error": "use one of the values listed",
    "string_pattern_mismatch": "change the value to match the pattern",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_parsing": "write a number",
    "bool_parsing": "write true or false",
    "list_type": "write a YAML list (`- item` lines)",
    "dict_type": "write a YAML mapping (`key: value` lines)",
    "model_type": "write a YAML mapping (`key: value` lines)",
    "string_type": "quote the value to make it a string",
    "ip_v4_address": "write a dotted IPv4 address such as 10.0.0.5",
    "ip_v4_network": "write a CIDR such as 10.0.0.0/16 with no host bits set",
    "too_short": "add at least one entry",
}


def findings_from(error: ValidationError, data: Any, model: type[BaseModel]) -> list[Finding]:
    """One finding per pydantic error, with the path as written in the file and a hint."""
    return [_finding(detail, data, model) for detail in error.errors(include_url=False)]


def broken_paths(error: ValidationError, data: Any) -> list[tuple[str, Path]]:
    """(pydantic error type, path as written in the file) of each error."""
    return [(detail["type"], _data_path(detail["loc"], data)) for detail in error.errors(include_url=False)]


def field_at(model: type[BaseModel], path: Path) -> FieldInfo | None:
    """The model field a path of the file names (`aws.capacity[0].market`), or None."""
    if not path or not isinstance(path[-1], str):
        return None
    annotation: Any = model
    for part in path[:-1]:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    target = _model_in(annotation)
    return target.model_fields.get(path[-1]) if target else None


def _finding(detail: ErrorDetails, data: Any, model: type[BaseModel]) -> Finding:
    path = _data_path(detail["loc"], data)
    kind = detail["type"]
    message = detail["msg"].rstrip(".")
    if kind == "extra_forbidden":
        allowed = _fields_at(model, path[:-1])
        close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(allowed)}"
        return Finding(path, "unknown key", hint)
    if kind.startswith(("greater_than", "less_than")):
        return Finding(path, message, "change the value to fit that bound")
    return Finding(path, message, _HINTS.get(kind, "see `gpucluster schema` for what fits here"))


def _data_path(loc: tuple[int | str, ...], data: Any) -> Path:
    """Keep the parts of pydantic's loc that exist in the data (drop union/type tags)."""
    path: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if _has_child(current, part):
            current = current[part]
            path.append(part)
        elif last and isinstance(current, dict) and not str(part).startswith(("[", "function")):
            path.append(part)
    return tuple(path)


def _has_child(container: Any, part: int | str) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container)


def _fields_at(model: type[BaseModel], path: Path) -> list[str]:
    """The field names allowed at a path of the model, for 'did you mean' hints."""
    annotation: Any = model
    for part in path:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    target = _model_in(annotation)
    return sorted(target.model_fields) if target else []


def _step(annotation: Any, part: str | int) -> Any:
    target = _model_in(annotation)
    if target is not None and isinstance(part, str):
        field = target.model_fields.get(part)
        return field.annotation if field else None
    for arg in _union_args(annotation):
        origin = typing.get_origin(arg)
        if origin is list and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(arg)[1]
    return None


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for arg in _union_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None
