"""slurm.packages: where Slurm comes from, as the model, `gpucluster show` and the role variables see it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpucluster.ansible_vars import image_vars, inventory
from gpucluster.clusterfile import Cluster, ClusterFileError, load_text
from gpucluster.clusterfile.model.software import UpstreamRelease
from gpucluster.pins import pin_lines
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "clusters" / "example.yaml").read_text())
SHA256 = "2e305a5cc051d08ded4d710e349636b6a054da2c371bbce85797744b693ca790"


def _load(data: dict[str, Any]) -> Cluster:
    return load_text(yaml.safe_dump(data), "test.yaml").cluster


def _with_release(release: dict[str, Any], slurm: str = "25.11.6") -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    data["versions"]["slurm"] = slurm
    data["slurm"]["packages"] = {"source": "upstream-release", "release": release}
    return data


def test_the_tarball_defaults_to_schedmds_download_of_the_pin() -> None:
    release = UpstreamRelease(sha256=SHA256)
    assert release.url_for("25.11.6") == "https://download.schedmd.com/slurm/slurm-25.11.6.tar.bz2"
    mirror = UpstreamRelease(sha256=SHA256, tarball_url="https://mirror.example.internal/slurm.tar.bz2")
    assert mirror.url_for("25.11.6") == "https://mirror.example.internal/slurm.tar.bz2"


def test_the_example_builds_its_pinned_slurm_on_the_controller() -> None:
    cluster = _load(EXAMPLE)
    assert cluster.slurm.packages.source == "upstream-release"
    line = next(line for line in pin_lines(cluster) if line.lstrip().startswith("slurm "))
    assert "25.11.6" in line
    assert f"built on head01 from {EXAMPLE['slurm']['packages']['release']['tarball_url']}" in line
    assert "(sha256 2e305a5cc051…) with SchedMD's debian/ packaging" in line


def test_role_variables_name_the_tarball_its_checksum_and_the_build_host() -> None:
    cluster = _load(_with_release({"sha256": SHA256, "build_host": "gpu-a01"}))
    host = inventory(cluster, "clusters/x.yaml").hosts["gpu-b02"]
    assert host["slurm_common_package_source"] == "upstream-release"
    assert host["slurm_common_release_url"] == "https://download.schedmd.com/slurm/slurm-25.11.6.tar.bz2"
    assert host["slurm_common_release_sha256"] == SHA256
    assert host["slurm_common_release_build_host"] == "gpu-a01"
    assert image_vars(cluster)["slurm_common_release_build_host"] == ""  # the image host builds its own


def test_the_distribution_source_sets_no_release() -> None:
    data = copy.deepcopy(EXAMPLE)
    del data["slurm"]["packages"]
    host = inventory(_load(data), "clusters/x.yaml").hosts["head01"]
    assert (host["slurm_common_release_url"], host["slurm_common_release_build_host"]) == ("", "")
    assert "the OS distribution's packages" in "\n".join(pin_lines(_load(data)))


@pytest.mark.parametrize(
    ("release", "slurm", "wanted"),
    [
        ({"sha256": SHA256}, "23.02.7", "slurm.packages.source: versions.slurm 23.02.7 cannot be built"),
        ({"sha256": SHA256}, "25.11", "slurm.packages.source: versions.slurm 25.11 cannot be built"),
        ({"sha256": SHA256, "build_host": "p5-od-1"}, "25.11.6", "release.build_host: the Slurm packages"),
        ({"tarball_url": "ftp://x/y.tar.bz2", "sha256": SHA256}, "25.11.6", "release.tarball_url: String"),
    ],
)
def test_a_release_that_cannot_give_the_pin_is_refused_at_load(
    release: dict[str, Any], slurm: str, wanted: str
) -> None:
    with pytest.raises(ClusterFileError) as caught:
        _load(_with_release(release, slurm))
    assert any(wanted in str(f) for f in caught.value.findings), [str(f) for f in caught.value.findings]
