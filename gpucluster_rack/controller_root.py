"""A Debian 13 controller root with the newest ansible-core the collection claims, built once and cached.

ansible-core 2.20 and later need Python 3.12 or newer on the controller, and the test machine is Debian 12
(Python 3.11). So the newest end of the tested range runs from a Debian 13 root (Python 3.13) made with
mmdebstrap through an apt-cacher-ng of its own (tests/rack/proxy.py, cache `apt-cacher-ng-trixie`), with a
venv at /opt/ansible holding exactly requirements-ansible-newest.txt. The root is cached under
/var/lib/gpucluster-rack/, keyed by that file and the recipe, so a later run reuses it.

Commands run in it by chroot inside a private mount namespace (`unshare --mount`): /proc, /dev and the
bind-mounted folders (the checkout read-only, a rack's state folder) vanish when the command ends, even a
killed one, so the cached root never keeps a mount.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpucluster_rack import ROOT
from gpucluster_rack.playbook import Playbook
from gpucluster_rack.proxy import start_cache
from gpucluster_rack.rack import STATE_ROOT, Rack, terminate
from gpucluster_rack.sh import progress, run

REQUIREMENTS = ROOT / "requirements-ansible-newest.txt"
# build-essential and the package lists: tests/ansible's release build and apt-offers tests run here too.
PACKAGES = "python3,python3-venv,openssh-client,ca-certificates,build-essential"
RECIPE_VERSION = "1"  # bump when _build or _install_venv changes, so cached roots are rebuilt
VENV = Path("/opt/ansible")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy")
CACHE_NAME = "trixie"  # its apt-cacher-ng cache and port (one per name, like a rack's)

# Argument 1 is the root, then binds as MODE:SOURCE:TARGET (MODE rw or ro), then `--` and the command.
# A fixed script whose data arrives as arguments, never spliced into it.
CHROOT = """\
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
while [ "$1" != -- ]; do
  mode=${1%%:*}; rest=${1#*:}; source=${rest%%:*}; target=${rest#*:}
  mkdir -p "$root$target"
  mount --bind "$source" "$root$target"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$root$target"; fi
  shift
done
shift
exec chroot "$root" "$@"
"""
# Where a run binds the checkout, read-only; the venv imports the gpucluster package from there (a .pth file,
# as an editable install would), so the plugins find it as an installed package.
CHECKOUT = Path("/checkout")


def pinned_ansible_core() -> str:
    """The ansible-core version requirements-ansible-newest.txt pins."""
    match = re.search(r"^ansible-core==(\S+)$", REQUIREMENTS.read_text(), re.M)
    assert match, f"{REQUIREMENTS}: no ansible-core==X.Y.Z line"
    return match.group(1)


def root_path() -> Path:
    """The cached root's folder, keyed by the requirements file and the recipe."""
    recipe = RECIPE_VERSION + PACKAGES + REQUIREMENTS.read_text()
    return STATE_ROOT / f"controller-trixie-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def ensure_root() -> Path:
    """Build the root once; later calls reuse it (under a lock, like the node image)."""
    root = root_path()
    if (root / ".complete").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".complete").exists():
            _build(root)
    return root


def bind(source: Path, target: Path | None = None, *, read_only: bool = False) -> str:
    """A bind for chroot_command: source at target (default: the same path) inside the root."""
    for path in (source, target or source):
        assert ":" not in str(path), f"{path}: a bind path cannot hold ':'"
    return f"{'ro' if read_only else 'rw'}:{source}:{target or source}"


def chroot_command(
    root: Path, command: Sequence[str], *, env: dict[str, str], binds: Sequence[str]
) -> list[str]:
    """The argv that runs command in root with only env set, the binds (bind()) mounted for it alone."""
    pairs = [f"{key}={value}" for key, value in env.items()]
    return [
        "unshare",
        "--mount",
        "--",
        "sh",
        "-euc",
        CHROOT,
        "sh",
        str(root),
        *binds,
        "--",
        "/usr/bin/env",
        "-i",
        *pairs,
        *command,
    ]


def _build(root: Path) -> None:
    progress(f"building controller root {root.name} (Debian 13, ansible-core {pinned_ansible_core()}), once")
    partial = root.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    work = root.with_suffix(".build")
    shutil.rmtree(work, ignore_errors=True)
    pid, port = start_cache(work, CACHE_NAME)
    try:
        # No mirror argument: mmdebstrap's default Debian mirrors for trixie (none named here).
        proxy = f'Acquire::http::Proxy "http://127.0.0.1:{port}";'
        run(
            [
                "mmdebstrap",
                "--variant=minbase",
                f"--include={PACKAGES}",
                f"--aptopt={proxy}",
                "--skip=cleanup/apt/lists",
                "trixie",
                str(partial),
            ],
            timeout=900,
        )
    finally:
        terminate(pid, timeout_s=5)
        shutil.rmtree(work, ignore_errors=True)
    _install_venv(partial)
    partial.rename(root)
    (root / ".complete").touch()


def _install_venv(root: Path) -> None:
    """The venv from the requirements file, by the root's own Python and pip (PyPI through pip itself)."""
    (root / "etc/apt/apt.conf.d/99mmdebstrap").unlink(missing_ok=True)  # the build's proxy, gone with it
    resolv = root / "etc/resolv.conf"
    resolv.unlink(missing_ok=True)
    resolv.write_text(Path("/etc/resolv.conf").read_text())
    shutil.copy(REQUIREMENTS, root / "tmp/requirements.txt")
    # pip trusts what the host trusts (a site's TLS-inspecting proxy included) and uses the host's proxy.
    shutil.copy(HOST_CA_BUNDLE, root / "tmp/host-ca.crt")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PIP_CERT": "/tmp/host-ca.crt"}
    env |= {key: value for key, value in os.environ.items() if key.lower() in PROXY_VARIABLES}
    for command in (
        ["python3", "-m", "venv", str(VENV)],
        # --no-deps, then pip check: the file must pin the whole closure, nothing comes in unpinned.
        [
            str(VENV / "bin/pip"),
            "install",
            "-q",
            "--no-cache-dir",
            "--no-deps",
            "-r",
            "/tmp/requirements.txt",
        ],
        [str(VENV / "bin/pip"), "check"],
    ):
        run(chroot_command(root, command, env=env, binds=[]), timeout=900)
    (root / "tmp/requirements.txt").unlink()
    (site_packages,) = (root / str(VENV).lstrip("/")).glob("lib/python3*/site-packages")
    (site_packages / "gpucluster-checkout.pth").write_text(f"{CHECKOUT}\n")
    (root / str(CHECKOUT).lstrip("/")).mkdir()
    (root / "tmp/host-ca.crt").unlink()
    resolv.unlink()


@dataclass(frozen=True)
class Controller:
    """The built root as an Ansible controller: commands run in it with the checkout at CHECKOUT."""

    root: Path
    scratch: Path  # bound at the root's /root and /tmp, so its commands write nothing into the cached root

    def command(
        self, args: Sequence[str], *, env: dict[str, str] | None = None, rack: Rack | None = None
    ) -> list[str]:
        """The argv running args in the root, in CHECKOUT; with rack, its state folder is bound too."""
        binds = [bind(ROOT, CHECKOUT, read_only=True)]
        for inside in (Path("/root"), Path("/tmp")):
            (self.scratch / inside.name).mkdir(parents=True, exist_ok=True)
            binds.append(bind(self.scratch / inside.name, inside))
        if rack is not None:
            binds.append(bind(rack.state))
        base = {
            "PATH": f"{VENV}/bin:/usr/bin:/bin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",  # the checkout is read-only and holds Python 3.11 bytecode
        }
        return chroot_command(
            self.root, ["/usr/bin/env", f"--chdir={CHECKOUT}", *args], env=base | (env or {}), binds=binds
        )

    def run(self, args: Sequence[str], *, timeout_s: float = 900) -> tuple[int, str]:
        """Run args in the root (host network: no rack); return the exit status and the output."""
        done = run(self.command(args), check=False, quiet=True, timeout=timeout_s)
        return done.returncode, done.stdout + done.stderr

    def in_rack(self, rack: Rack, args: Sequence[str]) -> tuple[int, str]:
        """Run an Ansible command in the root against the rack, inside the rack's bridge namespace."""
        env = {
            **rack.ansible_env(),
            "ANSIBLE_CONFIG": f"{CHECKOUT}/ansible.cfg",
            # ansible.cfg's fact cache is in the checkout's build/, read-only here: the rack's own instead.
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(rack.state / "ansible-facts"),
        }
        return rack.in_bridge(self.command(args, env=env, rack=rack))

    def converge(self, rack: Rack, *extra: str) -> Playbook:
        """ansible/site.yml against the rack from the root."""
        playbook = ["ansible-playbook", "-i", str(rack.cluster_file), f"{CHECKOUT}/ansible/site.yml", *extra]
        return Playbook(*self.in_rack(rack, playbook))
