"""The only code that reads a cluster file: YAML → validated, frozen Cluster, or findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FsPath

import yaml
from pydantic import ValidationError

from gpucluster.clusterfile.checks import run_checks
from gpucluster.clusterfile.findings import ClusterFileError, Finding
from gpucluster.clusterfile.model import Cluster
from gpucluster.clusterfile.pydantic_errors import findings_from
from gpucluster.clusterfile.stand_in import cross_field_findings
from gpucluster.clusterfile.yaml_limits import MAX_BYTES, LimitError, too_large
from gpucluster.clusterfile.yaml_positions import line_of, parse

DEFAULT_CLUSTER_FILE = "clusters/example.yaml"


@dataclass(frozen=True)
class Loaded:
    """A valid cluster with the warnings found while loading it."""

    cluster: Cluster
    source: str
    warnings: list[Finding] = field(default_factory=list)


def load(path: str | FsPath) -> Loaded:
    """Load and validate a cluster file; raise ClusterFileError with every problem found."""
    source = str(path)
    try:
        size_bytes = FsPath(path).stat().st_size
        if size_bytes > MAX_BYTES:  # refused unread: a huge file is no cluster file
            raise ClusterFileError([too_large(size_bytes).located(source, 1)])
        text = FsPath(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ClusterFileError(
            [
                Finding(
                    (),
                    f"cannot read the file: {reason}",
                    "check the path; FILE defaults to " + DEFAULT_CLUSTER_FILE,
                ).located(source, 0)
            ]
        ) from None
    return load_text(text, source)


def load_text(text: str, source: str = "<string>") -> Loaded:
    """Validate cluster-file text; `source` names it in messages."""
    try:
        data, lines, duplicates = parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClusterFileError(
            [
                Finding(
                    (), f"not valid YAML: {problem}", "fix the indentation or quoting at that line"
                ).located(source, line)
            ]
        ) from None
    except LimitError as exc:
        raise ClusterFileError([exc.finding.located(source, exc.finding.line)]) from None
    if duplicates:
        raise ClusterFileError([f.located(source, f.line) for f in duplicates])
    if not isinstance(data, dict):
        raise ClusterFileError(
            [
                Finding(
                    (),
                    "the file must be a YAML mapping",
                    "start with `apiVersion: gpucluster/v1` and `kind: Cluster`",
                ).located(source, lines.get((), 1))
            ]
        )
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as exc:
        found = findings_from(exc, data, Cluster)
        found += [f for f in cross_field_findings(exc, data) if f not in found]
        raise ClusterFileError([f.located(source, line_of(f.path, lines)) for f in found]) from None
    placed = [f.located(source, line_of(f.path, lines)) for f in run_checks(cluster)]
    errors = [f for f in placed if f.level == "error"]
    if errors:
        raise ClusterFileError(errors)
    return Loaded(cluster, source, [f for f in placed if f.level == "warning"])
