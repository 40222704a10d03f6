"""slurm.packages.source upstream-release: the build host's half of the pipeline, run for real here.

slurm_common's release.yml runs against localhost (the image build's case: the host builds its own packages)
with a release-shaped tarball made here: a mimic, not SchedMD's release. Its debian/ packaging has SchedMD's
source and package names (slurm-smd, slurm-smd-client, slurm-smd-dev) but builds empty packages with dpkg's
own tools, in well under a second. The fetch (a file:// URL), the sha256 check, the unpacking, the version
check against the pin, `dpkg-buildpackage -b -uc -us`, the publishing and the index are the role's real
tasks. Two steps are left out: installing the packaging tools with apt (its own tag, skipped: it would
change this machine) and mk-build-deps (a stub on PATH that records its arguments). What a node does with
the repository (copy, deb822 source, apt-cache madison, install at the pin, hold) is not run here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ansible.filter_plugins import filters
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
PIN = "25.11.6"

_CONTROL = """\
Source: slurm-smd
Maintainer: gpucluster tests <tests@example.invalid>
Section: admin
Priority: optional
Standards-Version: 4.6.0
"""
_PACKAGE = """
Package: {name}
Architecture: any
Description: mimic of SchedMD's {name} package
 Empty; built by the gpucluster tests.
"""
_CHANGELOG = """\
slurm-smd ({version}-1) UNRELEASED; urgency=medium

  * Mimic of SchedMD's debian/ packaging.

 -- gpucluster tests <tests@example.invalid>  Sun, 06 Dec 2026 00:00:00 +0000
"""
# Empty binary packages with dpkg's tools: dpkg-gencontrol records each in debian/files for dpkg-genchanges.
_RULES = """\
#!/usr/bin/make -f
PACKAGES := $(shell sed -n 's/^Package: //p' debian/control)
clean:
\trm -rf debian/tmp debian/files
build build-arch build-indep:
binary binary-arch binary-indep:
\tset -e; for p in $(PACKAGES); do \\
\t  mkdir -p debian/tmp/$$p/DEBIAN; \\
\t  dpkg-gencontrol -p$$p -Pdebian/tmp/$$p; \\
\t  dpkg-deb --root-owner-group --build debian/tmp/$$p ..; \\
\tdone
"""


def _filters() -> dict[str, Any]:
    return filters("slurm_release.py")


def _tarball(where: Path, version: str, *, debian: bool = True) -> tuple[Path, str]:
    """A release-shaped tarball (top directory slurm-<version>/) and its sha256."""
    top = where / f"slurm-{version}"
    (top / "debian").mkdir(parents=True) if debian else top.mkdir(parents=True)
    (top / "README").write_text("Mimic of a Slurm release tarball (gpucluster tests).\n")
    if debian:
        names = ["slurm-smd", "slurm-smd-client", "slurm-smd-dev"]
        (top / "debian" / "control").write_text(_CONTROL + "".join(_PACKAGE.format(name=n) for n in names))
        (top / "debian" / "changelog").write_text(_CHANGELOG.format(version=version))
        (top / "debian" / "rules").write_text(_RULES)
        (top / "debian" / "rules").chmod(0o755)
    path = where / f"slurm-{version}.tar.bz2"
    with tarfile.open(path, "w:bz2") as archive:
        archive.add(top, arcname=top.name)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _run(tmp_path: Path, url: str, sha256: str) -> subprocess.CompletedProcess[str]:
    """slurm_common's release.yml on localhost, building into tmp_path/release."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    stub = stubs / "mk-build-deps"
    stub.write_text(f'#!/bin/sh\necho "mk-build-deps $*" >> "{tmp_path / "ran.log"}"\n')
    stub.chmod(0o755)
    playbook = tmp_path / "release.yml"
    play = {
        "name": "Build the Slurm release packages here",
        "hosts": "localhost",
        "gather_facts": True,
        "gather_subset": ["min"],
        "vars": {
            "slurm_common_slurm_version": PIN,
            "slurm_common_package_source": "upstream-release",
            "slurm_common_release_url": url,
            "slurm_common_release_sha256": sha256,
            "slurm_common_release_build_host": "",
            "slurm_common_release_dir": str(tmp_path / "release"),
        },
        "tasks": [
            {
                "name": "Build or reuse the packages",
                "ansible.builtin.include_role": {
                    "name": "gpucluster.cluster.slurm_common",
                    "tasks_from": "release",
                },
            }
        ],
    }
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "--skip-tags",
            "slurm_common_build_tools",
            str(playbook),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )


def test_the_changelog_names_the_release() -> None:
    version = _filters()["slurm_release_version"]
    assert version(_CHANGELOG.format(version="25.11.6")) == "25.11.6-1"
    assert version("") == ""


def test_a_release_is_refused_unless_it_builds_the_pin() -> None:
    problem = _filters()["slurm_release_problem"]
    url = "https://download.schedmd.com/slurm/slurm-25.11.6.tar.bz2"
    assert problem(_CHANGELOG.format(version="25.11.6"), "25.11.6", url) == ""
    assert problem("slurm-smd (1:25.11.6-2) unstable; urgency=low\n", "25.11.6", url) == ""
    other = problem(_CHANGELOG.format(version="25.11.5"), "25.11.6", url)
    assert other.startswith(f"versions.slurm pins 25.11.6, but the tarball {url} builds Slurm 25.11.5")
    assert "slurm.packages.release.tarball_url" in other and "Nothing was installed" in other
    missing = problem(None, "24.05.8", url)
    assert "has no debian/ packaging" in missing and "slurm.packages.source: site-repository" in missing


needs_dpkg = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("dpkg-buildpackage", "dpkg-scanpackages", "dpkg-gencontrol")),
    reason="needs dpkg-dev (dpkg-buildpackage, dpkg-scanpackages)",
)


@needs_dpkg
def test_the_release_is_checked_built_published_and_then_left_alone(tmp_path: Path) -> None:
    tarball, sha256 = _tarball(tmp_path / "upstream", PIN)
    first = _run(tmp_path, tarball.as_uri(), sha256)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    repo = tmp_path / "release" / "repo"
    published = sorted(p.name for p in repo.glob("*.deb"))
    assert published == [f"slurm-smd-client_{PIN}-1_{_arch()}.deb", f"slurm-smd_{PIN}-1_{_arch()}.deb"]
    stanzas = [
        dict(line.split(": ", 1) for line in s.splitlines() if ": " in line and not line.startswith(" "))
        for s in (repo / "Packages").read_text().strip().split("\n\n")
    ]
    assert sorted((s["Package"], s["Version"]) for s in stanzas) == [
        ("slurm-smd", f"{PIN}-1"),
        ("slurm-smd-client", f"{PIN}-1"),
    ]
    stamp = (tmp_path / "release" / "built-from").read_text()
    assert stamp == f"{tarball.as_uri()} sha256:{sha256}\n"
    assert (tmp_path / "ran.log").read_text().strip().endswith("debian/control")  # mk-build-deps ran

    again = _run(tmp_path, tarball.as_uri(), sha256)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "changed=0" in again.stdout and "Build the Slurm packages" not in again.stdout


@needs_dpkg
def test_a_tarball_with_another_checksum_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    tarball, _ = _tarball(tmp_path / "upstream", PIN)
    result = _run(tmp_path, tarball.as_uri(), "0" * 64)
    assert result.returncode != 0
    assert f"versions.slurm pins {PIN}, but localhost could not fetch {tarball.as_uri()}" in result.stdout
    assert "slurm.packages.release.sha256" in result.stdout and "Nothing was installed" in result.stdout
    assert not (tmp_path / "ran.log").exists() and not (tmp_path / "release" / "repo").exists()


@needs_dpkg
def test_a_tarball_of_another_release_is_refused_naming_both(tmp_path: Path) -> None:
    tarball, sha256 = _tarball(tmp_path / "upstream", "25.11.5")
    result = _run(tmp_path, tarball.as_uri(), sha256)
    assert result.returncode != 0
    assert (
        f"versions.slurm pins {PIN}, but the tarball {tarball.as_uri()} builds Slurm 25.11.5" in result.stdout
    )
    assert not (tmp_path / "ran.log").exists() and not (tmp_path / "release" / "repo").exists()


@needs_dpkg
def test_a_tarball_without_debian_packaging_is_refused(tmp_path: Path) -> None:
    tarball, sha256 = _tarball(tmp_path / "upstream", PIN, debian=False)
    result = _run(tmp_path, tarball.as_uri(), sha256)
    assert result.returncode != 0
    assert f"the tarball {tarball.as_uri()} has no debian/ packaging" in result.stdout


def _arch() -> str:
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
