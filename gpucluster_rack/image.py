"""Build and cache the Debian 12 node image with mmdebstrap (packages come through the host's sources)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path

from gpucluster_rack.sh import progress, run

CACHE = Path("/var/cache/gpucluster-rack")
PACKAGES = (
    "systemd,systemd-sysv,dbus,libpam-systemd,openssh-server,python3,python3-apt,sudo,iproute2,"
    "iputils-ping,procps,apt-utils,ca-certificates"
)
RECIPE_VERSION = "2"  # bump when _prepare changes, so cached images are rebuilt
APT_SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))


def host_sources() -> Path | None:
    """The host's own Debian sources file: the image uses the same mirrors (none named by us)."""
    return next((p for p in APT_SOURCES if p.is_file() and p.stat().st_size > 0), None)


def image_path() -> Path:
    """Cached image directory, keyed by the package list and the host's sources."""
    sources = host_sources()
    recipe = RECIPE_VERSION + PACKAGES + (sources.read_text() if sources else "")
    key = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    return CACHE / f"image-bookworm-{key}"


def ensure_image() -> Path:
    """Build the image once; later calls reuse it (under a lock: `make test` boots two racks at once)."""
    image = image_path()
    if (image / ".complete").exists():
        return image
    image.parent.mkdir(parents=True, exist_ok=True)
    with (image.parent / f"{image.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (image / ".complete").exists():
            return image
        return _build(image)


def _build(image: Path) -> Path:
    progress(f"building node image {image.name} with mmdebstrap (about a minute, once)")
    partial = image.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    args = ["mmdebstrap", "--variant=minbase", f"--include={PACKAGES}", "bookworm", str(partial)]
    sources = host_sources()
    if sources is not None:
        args.append(str(sources))
    run(args, timeout=900)
    _prepare(partial)
    partial.rename(image)
    (image / ".complete").touch()
    return image


def _prepare(root: Path) -> None:
    # apt-daily timers take the dpkg lock at random times; Ansible then fails on a busy lock.
    for timer in ("apt-daily.timer", "apt-daily-upgrade.timer"):
        (root / "etc/systemd/system" / timer).unlink(missing_ok=True)
        (root / "etc/systemd/system" / timer).symlink_to("/dev/null")
    (root / "etc/machine-id").write_text("")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    # A new node has no package indexes: mark them stale so roles refresh them (cache_valid_time).
    lists = root / "var/lib/apt/lists"
    os.utime(lists, (0, 0))
    (root / "var/lib/apt/periodic/update-success-stamp").unlink(missing_ok=True)
    (root / "etc/apt/apt.conf.d/80gpucluster-rack").write_text(
        'Acquire::http::Timeout "30";\nAcquire::Retries "3";\n'
    )
