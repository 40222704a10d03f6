"""docs/cluster-file.md is exactly what tools/cluster_file_reference.py generates from the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.clusterfile.model.software import Versions
from tools import cluster_file_reference as reference


def test_reference_is_current() -> None:
    current = reference.OUTPUT.read_text(encoding="utf-8") if reference.OUTPUT.exists() else ""
    assert current == reference.render(), (
        "docs/cluster-file.md differs from the cluster-file model: run `make docs` and commit the result"
    )


def test_every_field_path_is_listed() -> None:
    paths = {row.path for section in reference.sections() for row in section.rows}
    assert {"name", "slurm.partitions[].node_groups", "onprem.profiles.<key>.gpus.model"} <= paths
    assert {"aws.capacity[].max_count", "aws.spot.requeue_exit_code", "economics.onprem.pue"} <= paths
    assert {f"versions.{name}" for name in Versions.model_fields} <= paths


def test_rows_carry_type_default_constraint_and_comment() -> None:
    rows = {row.path: row for section in reference.sections() for row in section.rows}
    max_count = rows["aws.capacity[].max_count"]
    assert (max_count.type_, max_count.default, max_count.constraints) == ("integer", "required", "> 0")
    idle = rows["aws.capacity[].idle_minutes"]
    assert (idle.default, idle.constraints) == ("`10`", "≥ 1; ≤ 10080")
    assert "powered down" in idle.meaning  # a Field description
    assert "chrony" in rows["onprem.time_servers"].meaning  # a comment above the field
    assert "controller" in rows["slurm.accounting.host"].meaning  # a comment beside the field
    assert rows["onprem.service_hosts[].address"].type_ == "IPv4 address"  # inherited from Host


def test_check_mode_names_make_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "cluster-file.md"
    stale.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(reference, "OUTPUT", stale)
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    assert reference.main(["--check"]) == 1
    assert "make docs" in capsys.readouterr().out
    assert reference.main([]) == 0
    assert reference.main(["--check"]) == 0
