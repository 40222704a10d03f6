"""Slurm from the release tarball and from a site repository, installed at the pin and held, on a test rack.

Rack "s" (ctl + n1) converges role slurm_common only (`ansible/site.yml --tags slurm_common`): the stand-in
packages are empty (tests/ansible/test_slurm_release.py's release-shaped tarball: SchedMD's slurm-smd-*
names, a debian/rules that builds empty packages with dpkg's tools), so there is no slurmd or slurmctld to
start. What runs is the role's real path on real apt and dpkg inside the nodes:

- upstream-release: the tarball, served over HTTP inside the rack network with its sha256 in the cluster
  file, is fetched, checked and built on the build host (the controller, after the role installs the
  packaging tools there); the flat repository reaches n1 through the control machine; each node adds it as
  a trusted `file:` source and installs slurm-smd-client at exactly the pin and holds it. A re-run changes
  nothing. Before that, a pin the tarball does not build is refused before anything is installed.
- site-repository: the cluster then moves to a newer pin from a signed flat repository (key made at test
  time, served in the rack network), which also offers a newer build; the nodes move to the pin, held.
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster_rack.network import BRIDGE_ADDRESS, bridge_ns
from gpucluster_rack.nvidia_mimic import Deb, build_deb, release_text
from gpucluster_rack.playbook import Playbook, converge
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.sh import progress
from gpucluster_rack.signing import gpg, signing_home
from tests.ansible.test_slurm_release import _tarball
from tests.rack.conftest import require_rack_prerequisites

RACK = "s"
PORT = 8581
SERVED = f"http://{BRIDGE_ADDRESS}:{PORT}"
PIN = "25.11.6"  # what the stand-in tarball builds (its debian/changelog: 25.11.6-1)
OTHER_PIN = "25.11.7"  # a pin that tarball does not build; the site repository's pin below
SITE_NEWER = "25.11.8"  # also offered by the site repository, never installed
NODES = ("ctl", "n1")
CLIENT = "slurm-smd-client"
RELEASE_REPO = "/var/lib/gpucluster/slurm-release/repo"
RELEASE_STAMP = "/var/lib/gpucluster/slurm-release/built-from"
BUILD_TOOLS = ("build-essential", "devscripts", "equivs")
# The control machine's copy of the build host's repository (vars/main.yml: __slurm_common_release_stage).
STAGE = Path("~/.cache/gpucluster/slurm-release").expanduser()


@dataclass
class Seen:
    """What a node holds after a converge: every installed package's version, the holds, the Slurm sources."""

    installed: dict[str, str]
    held: set[str]
    offered: str  # apt-cache madison slurm-smd-client, whitespace folded
    sources: dict[str, str]  # /etc/apt/sources.list.d/slurm*.sources by name
    repository: str  # sha256sum of the release repository's files ('' when there is none)
    built_from: bool  # the node holds a build stamp (only the build host should)


@dataclass
class Released:
    """The rack and each converge: the refused pin, the first and second at the pin, the site repository."""

    rack: Rack
    refused: Playbook
    after_refusal: dict[str, str]
    first: Playbook
    second: Playbook
    at_pin: dict[str, Seen]
    site: Playbook
    at_site_pin: dict[str, Seen]


def _seen(rack: Rack, name: str) -> Seen:
    listing = _sh(rack, name, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    rows = [line.split() for line in listing.splitlines()]
    sources = _sh(
        rack, name, 'for f in /etc/apt/sources.list.d/slurm*.sources; do echo "== $f"; cat $f; done'
    )
    return Seen(
        installed={row[1]: row[2] for row in rows if len(row) == 3 and row[0][1] == "i"},
        held=set(_sh(rack, name, "apt-mark showhold").split()),
        offered=" ".join(_sh(rack, name, f"apt-cache madison {CLIENT}").split()),
        sources={
            part.split("\n", 1)[0].rsplit("/", 1)[-1]: part.split("\n", 1)[-1]
            for part in sources.split("== ")
            if part.strip() and "\n" in part
        },
        repository=_sh(rack, name, f"cd {RELEASE_REPO} 2>/dev/null && sha256sum *"),
        built_from=_sh(rack, name, f"test -e {RELEASE_STAMP} && echo yes").strip() == "yes",
    )


def _sh(rack: Rack, node: str, command: str) -> str:
    return rack.ssh(node, command, check=False)


def _run(rack: Rack, what: str) -> Playbook:
    started = time.monotonic()
    run = converge(rack, "--tags", "slurm_common")
    progress(f"rack {rack.name}: {what}: rc {run.rc} in {time.monotonic() - started:.0f} s")
    return run


def _write_cluster_file(rack: Rack, base: dict[str, Any], pin: str, packages: Mapping[str, object]) -> None:
    cluster = yaml.safe_load(yaml.safe_dump(base))
    cluster["versions"]["slurm"] = pin
    cluster["slurm"]["packages"] = packages
    rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))


def _site_repository(root: Path) -> None:
    """A flat apt repository of slurm-smd-client at OTHER_PIN and SITE_NEWER, its index signed."""
    root.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as work:
        for version in (OTHER_PIN, SITE_NEWER):
            build_deb(Deb(CLIENT, f"{version}-1"), root, Path(work))
    index = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."], cwd=root, check=True, capture_output=True
    ).stdout
    (root / "Packages").write_bytes(index)
    (root / "Packages.gz").write_bytes(gzip.compress(index))
    (root / "Release").write_text(release_text(root, "gpucluster test site"))
    with signing_home("gpucluster test site <site@gpucluster.invalid>") as home:
        gpg(home, "--yes", "--clearsign", "--output", str(root / "InRelease"), str(root / "Release"))
        gpg(home, "--yes", "--armor", "--output", str(root / "key.asc"), "--export")


def _wait_for_server(rack: Rack) -> None:
    probe = f"import urllib.request; urllib.request.urlopen('{SERVED}/')"
    rack.ssh(
        "n1", f'for i in $(seq 50); do python3 -c "{probe}" 2>/dev/null && exit 0; sleep 0.2; done; exit 1'
    )


def _slurm_and_tools(rack: Rack, node: str) -> str:
    """Installed Slurm, munge and build tools, apt sources, the repository: what a refusal must not leave."""
    listing = _sh(rack, node, "dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' 2>/dev/null")
    names = [
        row.split()[1]
        for row in listing.splitlines()
        if row.startswith("ii")
        and re.match(r"(slurm|munge|build-essential|devscripts|equivs)", row.split()[1])
    ]
    sources = [name for name in _sh(rack, node, "ls /etc/apt/sources.list.d/").split() if "slurm" in name]
    return " ".join(names + sources + _sh(rack, node, f"ls -A {RELEASE_REPO} 2>/dev/null").split())


@pytest.fixture(scope="module")
def released() -> Iterator[Released]:
    """Rack "s", the tarball and the site repository served: a refused pin, two converges, a new source."""
    require_rack_prerequisites()
    booted = Rack(name=RACK, size=2)
    server: subprocess.Popen[bytes] | None = None
    try:
        booted.up()
        served = booted.state / "served"
        tarball, sha256 = _tarball(served, PIN)
        _site_repository(served / "site")
        http = [
            "python3",
            "-m",
            "http.server",
            "--bind",
            BRIDGE_ADDRESS,
            "--directory",
            str(served),
            str(PORT),
        ]
        server = subprocess.Popen(
            ["ip", "netns", "exec", bridge_ns(RACK), *http],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_server(booted)
        for node in NODES:  # a site's nodes reach its own servers directly, not through the apt proxy
            booted.ssh(
                node,
                f"echo 'Acquire::http::Proxy::{BRIDGE_ADDRESS} \"DIRECT\";' > /etc/apt/apt.conf.d/82direct",
            )
        (booted.state / "ssh-control").mkdir(exist_ok=True)
        base = yaml.safe_load(booted.cluster_file.read_text())
        release = {
            "source": "upstream-release",
            "release": {"tarball_url": f"{SERVED}/{tarball.name}", "sha256": sha256},
        }
        _write_cluster_file(booted, base, OTHER_PIN, release)
        refused = _run(booted, "refused pin")
        after_refusal = {node: _slurm_and_tools(booted, node) for node in NODES}
        _write_cluster_file(booted, base, PIN, release)
        first = _run(booted, "upstream-release")
        second = _run(booted, "re-run") if first.rc == 0 else first
        at_pin = {node: _seen(booted, node) for node in NODES}
        site = {
            "source": "site-repository",
            "repository": f"{SERVED}/site/",
            "signing_key": f"{SERVED}/site/key.asc",
        }
        _write_cluster_file(booted, base, OTHER_PIN, site)
        site_run = _run(booted, "site-repository") if second.rc == 0 else second
        at_site_pin = {node: _seen(booted, node) for node in NODES}
        yield Released(booted, refused, after_refusal, first, second, at_pin, site_run, at_site_pin)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        down(RACK)
        for stage in STAGE.glob(f"testrack{RACK}-*"):
            shutil.rmtree(stage, ignore_errors=True)


def test_a_pin_the_release_does_not_build_is_refused_before_anything_is_installed(released: Released) -> None:
    assert released.refused.rc != 0
    output = " ".join(released.refused.output.split())
    tarball = f"{SERVED}/slurm-{PIN}.tar.bz2"
    expected = f"pins {OTHER_PIN}, but the tarball {tarball} builds Slurm {PIN} (debian/changelog {PIN}-1)"
    assert expected in output, released.refused.output[-4000:]
    assert f"versions.slurm {expected}" in output and "Nothing was installed" in output
    # No Slurm, munge or build tools on either node, no Slurm source and no repository.
    assert released.after_refusal == dict.fromkeys(NODES, ""), released.after_refusal


def test_the_release_is_built_on_the_controller_and_installed_at_the_pin_and_held(released: Released) -> None:
    assert released.first.rc == 0, released.first.output[-6000:]
    assert "Build the Slurm packages" in released.first.output
    ctl, n1 = released.at_pin["ctl"], released.at_pin["n1"]
    # The role installed the packaging tools on the build host only, and built there only.
    assert set(BUILD_TOOLS) <= set(ctl.installed) and not set(BUILD_TOOLS) & set(n1.installed)
    assert ctl.built_from and not n1.built_from
    for name, node in released.at_pin.items():
        assert node.installed.get(CLIENT) == f"{PIN}-1", (name, node.installed.get(CLIENT))
        assert CLIENT in node.held, (name, node.held)
        assert "munge" in node.installed, name
        source = node.sources.get("slurm-release.sources", "")
        assert f"URIs: file:{RELEASE_REPO}" in source and "Trusted: yes" in source, (name, node.sources)
        assert f"{PIN}-1 | file:{RELEASE_REPO}" in node.offered, (name, node.offered)


def test_n1_installs_from_a_copy_of_the_build_hosts_repository(released: Released) -> None:
    ctl, n1 = released.at_pin["ctl"], released.at_pin["n1"]
    files = sorted(line.split()[-1] for line in n1.repository.splitlines())
    # The runtime packages and their index, not the -dev package.
    assert files == ["Packages", f"slurm-smd-client_{PIN}-1_amd64.deb", f"slurm-smd_{PIN}-1_amd64.deb"]
    assert n1.repository == ctl.repository


def test_a_re_run_changes_nothing(released: Released) -> None:
    assert released.second.rc == 0, released.second.output[-6000:]
    changed = {host: counts["changed"] for host, counts in released.second.recap().items()}
    assert changed == dict.fromkeys(NODES, 0), released.second.output[-6000:]
    assert "Build the Slurm packages" not in released.second.output


def test_a_signed_site_repository_moves_the_nodes_to_its_pin_and_holds_it(released: Released) -> None:
    assert released.site.rc == 0, released.site.output[-6000:]
    for name, node in released.at_site_pin.items():
        assert f"{SITE_NEWER}-1 | {SERVED}/site" in node.offered, (name, node.offered)
        assert node.installed.get(CLIENT) == f"{OTHER_PIN}-1", (name, node.installed.get(CLIENT))
        assert CLIENT in node.held, (name, node.held)
        source = node.sources.get("slurm.sources", "")
        assert f"URIs: {SERVED}/site/" in source and "Signed-By: /etc/apt/keyrings/slurm.asc" in source, (
            name,
            node.sources,
        )
    simulated = _sh(released.rack, "n1", "apt-get -s upgrade")
    assert not re.search(r"^Inst slurm", simulated, re.M), simulated
