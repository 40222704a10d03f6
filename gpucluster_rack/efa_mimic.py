"""A mimic of AWS's EFA installer tarball, built and signed at test time.

The layout the net_efa role relies on: `aws-efa-installer/` with `env.sh` (EFA_INSTALLER_VERSION),
`efa_installer.sh`, and packages under `DEBS/DEBIAN12/x86_64/` (rdma-core's in `rdma-core/`), among them
the aws-ofi-nccl plugin (`libnccl-ofi`) at the version the installer bundles. The script is ours: it takes
the real installer's options, installs the bundled packages with apt and writes
`/opt/amazon/efa_installed_packages` in the real installer's format (name_version_arch entries). The
tarball has a detached signature by a key made here, served next to it like AWS's.
"""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path

from gpucluster_rack.nvidia_mimic import Deb, build_deb
from gpucluster_rack.signing import fingerprint, gpg, signing_home

INSTALLER = "1.51.0"
AWS_OFI_NCCL = "1.22.0"
PLUGIN_PACKAGE = "libnccl-ofi"
PACKAGES = (
    Deb("efa-config", "1.18-1"),
    Deb("efa-profile", "1.7-1"),
    Deb("libfabric1-aws", "2.7.0amzn2.0-1"),
    Deb("libfabric-aws-bin", "2.7.0amzn2.0-1", "libfabric1-aws (= 2.7.0amzn2.0-1)"),
    Deb("openmpi50-aws", "5.0.8-1"),
    Deb(
        PLUGIN_PACKAGE,
        f"{AWS_OFI_NCCL}-1",
        "libfabric1-aws (>= 2.0)",
        {"opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so": "gpucluster mimic of aws-ofi-nccl (empty)\n"},
    ),
)
RDMA_CORE = (Deb("rdma-core", "65.0-1"), Deb("ibverbs-providers", "65.0-1", "rdma-core (= 65.0-1)"))

_INSTALLER_SCRIPT = """#!/bin/bash
# gpucluster mimic of efa_installer.sh: the real one's options, its package record, apt for the packages.
set -euo pipefail
cd "$(dirname "$0")"
source ./env.sh
for option in "$@"; do
  case "$option" in
    -y|--yes|-n|--no-verify|-l|--skip-limit-conf|-k|--skip-kmod|-g|--enable-gdr|-m|--minimal) ;;
    *) echo "unknown option $option" >&2; exit 2 ;;
  esac
done
. /etc/os-release
dir="DEBS/${ID^^}${VERSION_ID//./}/$(uname -m)"
test -d "$dir" || { echo "Unsupported operating system." >&2; exit 1; }
packages=("$dir"/*.deb "$dir"/rdma-core/*.deb)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]/#/./}" >/dev/null
mkdir -p /opt/amazon
{
  echo "# EFA installer version: ${EFA_INSTALLER_VERSION}"
  echo "# Debug packages installed: no"
  echo "# Packages installed:"
  for deb in "${packages[@]}"; do basename "${deb%.deb}"; done | tr '\\n' ' '
  echo
} > /opt/amazon/efa_installed_packages
echo "EFA installation complete."
"""


def build(root: Path) -> str:
    """Write aws-efa-installer-<INSTALLER>.tar.gz, its .sig and aws-efa-installer.key under root.

    Returns the signing key's fingerprint.
    """
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        top = work / "aws-efa-installer"
        debs = top / "DEBS" / "DEBIAN12" / "x86_64"
        (debs / "rdma-core").mkdir(parents=True)
        for deb in PACKAGES:
            build_deb(deb, debs, work / "build")
        for deb in RDMA_CORE:
            build_deb(deb, debs / "rdma-core", work / "build")
        (top / "env.sh").write_text(f'EFA_INSTALLER_VERSION="{INSTALLER}"\n')
        script = top / "efa_installer.sh"
        script.write_text(_INSTALLER_SCRIPT)
        script.chmod(0o755)
        tarball = root / f"aws-efa-installer-{INSTALLER}.tar.gz"
        with tarfile.open(tarball, "w:gz") as archive:
            archive.add(top, arcname="aws-efa-installer")
    with signing_home("gpucluster mimic of the EFA installer key <efa@gpucluster.invalid>") as home:
        gpg(home, "--yes", "--detach-sign", "--output", f"{tarball}.sig", str(tarball))
        gpg(home, "--yes", "--armor", "--output", str(root / "aws-efa-installer.key"), "--export")
        return fingerprint(home)


def installed_packages() -> dict[str, str]:
    """Package name to version, as the mimic installs them on a Debian 12 node."""
    return {deb.name: deb.version for deb in (*PACKAGES, *RDMA_CORE)}


__all__ = ["AWS_OFI_NCCL", "INSTALLER", "PLUGIN_PACKAGE", "build", "installed_packages"]
