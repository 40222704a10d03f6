"""Filters: what a Slurm release tarball's Debian packaging says it builds, and whether that is the pin.

SchedMD's release tarballs carry debian/ packaging (source package slurm-smd) since 23.11; its changelog's
first entry names the package version `<release>-<revision>`.
https://slurm.schedmd.com/quickstart_admin.html#debuild
"""

from __future__ import annotations

import re
from typing import Any

# A Debian changelog's first line: `package (version) distribution; urgency=…`.
_ENTRY = re.compile(r"^(?P<package>[a-z0-9][a-z0-9.+-]*) \((?P<version>[^()\s]+)\)", re.MULTILINE)


def slurm_release_version(changelog: str) -> str:
    """The package version of a debian/changelog's first entry (e.g. 25.11.6-1); '' when there is none."""
    match = _ENTRY.search(changelog or "")
    return match["version"] if match else ""


def _upstream(version: str) -> str:
    """The upstream part of a Debian version: no epoch, no revision."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def slurm_release_problem(changelog: str | None, pin: str, url: str) -> str:
    """Why the unpacked tarball at `url` cannot give Slurm `pin` ('' when it can), for the role's refusal."""
    if changelog is None:
        return (
            f"versions.slurm pins {pin}, but the tarball {url} has no debian/ packaging (SchedMD's releases"
            " carry it from 23.11 on). Point slurm.packages.release.tarball_url at a 23.11 or later release"
            " tarball (with its sha256), or use slurm.packages.source: site-repository."
            " Nothing was installed."
        )
    version = slurm_release_version(changelog)
    if _upstream(version) != pin:
        shown = _upstream(version) if version else "an unreadable version"
        return (
            f"versions.slurm pins {pin}, but the tarball {url} builds Slurm {shown} (debian/changelog"
            f" {version or 'without an entry'}). Set slurm.packages.release.tarball_url and sha256 to the"
            f" {pin} release, or pin {shown} in versions.slurm. Nothing was installed."
        )
    return ""


class FilterModule:
    """gpucluster.cluster.slurm_release_version and slurm_release_problem."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "slurm_release_version": slurm_release_version,
            "slurm_release_problem": slurm_release_problem,
        }
