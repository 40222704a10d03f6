"""Cross-field checks for a file the model refused: run them on a stand-in with the broken values set aside.

A structural error (a typo'd key, a value of the wrong type or outside its set) stops the model, and
without a model no cross-field rule runs, so a user would fix one batch of problems only to meet the
next. The stand-in is the file's data with each broken value set aside where that is safe:
- an unknown key is dropped (no rule reads it);
- a broken scalar field that has a default is dropped, so the default stands in for it.
A broken required field, list item or section cannot be set aside without inventing data, so then no
cross-field finding is reported. Findings about the object that held a set-aside value are left out
too: they would be about the default, not about what the user wrote.
"""

from __future__ import annotations

import copy
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from gpucluster.clusterfile.checks import run_checks
from gpucluster.clusterfile.findings import Finding, Path
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.pydantic_errors import broken_paths, field_at

_ROUNDS = 3  # setting a value aside can reveal another error (a dropped typo leaves a field missing)


def cross_field_findings(error: ValidationError, data: Any) -> list[Finding]:
    """Errors the cross-field rules find in the stand-in of data, or [] when there is no safe one."""
    if not isinstance(data, dict):
        return []
    stand_in = copy.deepcopy(data)
    set_aside: list[Path] = []
    for _ in range(_ROUNDS):
        for kind, path in broken_paths(error, stand_in):
            if not _set_aside(stand_in, kind, path, set_aside):
                return []
        try:
            cluster = Cluster.model_validate(stand_in)
        except ValidationError as again:
            error = again
            continue
        return [f for f in run_checks(cluster) if f.level == "error" and not _about(f.path, set_aside)]
    return []


def _set_aside(doc: dict[str, Any], kind: str, path: Path, set_aside: list[Path]) -> bool:
    """Drop the value at path if that is safe (see the module docstring); False when it is not."""
    if not path or not isinstance(path[-1], str):
        return False
    parent: Any = doc
    for part in path[:-1]:
        parent = parent[part]
    if not isinstance(parent, dict) or path[-1] not in parent:
        return False
    if kind != "extra_forbidden":
        field = field_at(Cluster, path)
        if field is None or field.is_required() or not _scalar(field.annotation):
            return False
        set_aside.append(path)
    del parent[path[-1]]
    return True


def _scalar(annotation: Any) -> bool:
    """True when no model, list or dict can hide in the annotation (nothing a rule could look inside)."""
    args = typing.get_args(annotation)
    if args:
        return typing.get_origin(annotation) not in (list, dict, tuple, set) and all(map(_scalar, args))
    return not (isinstance(annotation, type) and issubclass(annotation, (BaseModel, list, dict)))


def _about(path: Path, set_aside: list[Path]) -> bool:
    """Whether a finding at path concerns the object that held a set-aside value."""
    return any(path[: len(gone) - 1] == gone[:-1] for gone in set_aside)
