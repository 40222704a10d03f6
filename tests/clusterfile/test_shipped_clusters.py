"""Every shipped cluster file validates, and the JSON Schema accepts each of them."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from gpucluster.cli import cluster_schema
from gpucluster.clusterfile import load
from tests.conftest import CLUSTER_FILES


def test_three_cluster_files_ship() -> None:
    names = {p.name for p in CLUSTER_FILES}
    assert {"example.yaml", "cloud-only.yaml", "onprem-only.yaml"} <= names


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=[p.stem for p in CLUSTER_FILES])
def test_cluster_file_validates_without_warnings(path: Path) -> None:
    assert load(path).warnings == []


def test_schema_is_valid_draft_2020_12() -> None:
    schema = cluster_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=[p.stem for p in CLUSTER_FILES])
def test_schema_accepts_cluster_file(path: Path) -> None:
    jsonschema.Draft202012Validator(cluster_schema()).validate(yaml.safe_load(path.read_text()))


def test_schema_rejects_unknown_key() -> None:
    data = yaml.safe_load(CLUSTER_FILES[0].read_text())
    data["nodez"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(cluster_schema()).validate(data)
