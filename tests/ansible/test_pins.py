"""Every pin in `versions` reaches a role that installs it, through the inventory's role variables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from gpucluster.clusterfile import load
from gpucluster.clusterfile.model.software import Versions
from gpucluster.pins import pin_sources
from tests.conftest import ROOT

ROLES = ROOT / "ansible" / "roles"


def _used_by_a_role(variable: str) -> bool:
    pattern = re.compile(rf"\b{re.escape(variable)}\b")
    return any(
        pattern.search(path.read_text())
        for path in ROLES.rglob("*.yml")
        if path.parent.name in {"tasks", "vars", "handlers"}
    )


def test_every_pin_has_one_source_and_role_variable() -> None:
    sources = pin_sources(load(ROOT / "clusters" / "example.yaml").cluster)
    assert sorted(s.pin for s in sources) == sorted(Versions.model_fields)


def test_every_pin_is_installed_by_a_role_that_reads_it() -> None:
    sources = pin_sources(load(ROOT / "clusters" / "example.yaml").cluster)
    unused = {s.pin for s in sources if not _used_by_a_role(s.variable)}
    assert unused == set()  # a new pin that no role installs fails here


def test_the_inventory_hands_each_rack_pin_to_its_role_variable() -> None:
    cluster_file = ROOT / "clusters" / "example.yaml"
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-inventory"),
            "-i",
            str(cluster_file),
            "--host",
            "gpu-a01",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    host = json.loads(result.stdout)
    for source in pin_sources(load(cluster_file).cluster):
        if source.onprem is not None:
            assert host[source.variable] == source.version, source
