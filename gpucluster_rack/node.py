"""One test-rack node: overlay root, own cgroup, own network namespace, systemd-nspawn --boot."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gpucluster_rack.network import node_ns
from gpucluster_rack.sh import progress, run

CGROUP_HIERARCHIES = (Path("/sys/fs/cgroup/systemd"), Path("/sys/fs/cgroup/unified"))


@dataclass(frozen=True)
class Node:
    """Where a node's files live and what it is called."""

    rack: str
    name: str
    address: str
    state: Path  # per-node directory: upper/, work/, root/ (merged), nspawn.log

    @property
    def root(self) -> Path:
        """The merged root filesystem."""
        return self.state / "root"

    def cgroup_dirs(self) -> list[Path]:
        """Per-node cgroup directories (nspawn --keep-unit puts payload/supervisor under them)."""
        return [h / f"gcr-{self.rack}" / self.name for h in CGROUP_HIERARCHIES if h.exists()]


def mount_root(node: Node, image: Path) -> None:
    """Overlay the shared image with a per-node upper directory."""
    for sub in ("upper", "work", "root"):
        (node.state / sub).mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={image},upperdir={node.state / 'upper'},workdir={node.state / 'work'}"
    run(["mount", "-t", "overlay", "overlay", "-o", options, str(node.root)])


def personalise(node: Node, public_key: str, apt_proxy: str, gpu_count: int) -> None:
    """Host name, host keys, root's authorized key, apt proxy, declared GPU device nodes."""
    root = node.root
    (root / "etc/hostname").write_text(f"{node.name}\n")
    (root / "etc/hosts").write_text(f"127.0.0.1 localhost\n{node.address} {node.name}\n")
    run(["ssh-keygen", "-A", "-f", str(root)])
    ssh_dir = root / "root/.ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text(public_key)
    (ssh_dir / "authorized_keys").chmod(0o600)
    (root / "etc/apt/apt.conf.d/81gpucluster-proxy").write_text(f'Acquire::http::Proxy "{apt_proxy}";\n')
    if gpu_count:
        _declare_gpus(root, gpu_count)


def _declare_gpus(root: Path, count: int) -> None:
    # nspawn's /dev is a fresh tmpfs at every boot, so the device nodes come from a oneshot unit.
    # Character major 195 is NVIDIA's; nothing answers behind them: hardware checks must fail.
    nodes = " ".join(f"/dev/nvidia{n}" for n in range(count))
    script = "".join(f"mknod -m 666 /dev/nvidia{n} c 195 {n}; " for n in range(count))
    unit = root / "etc/systemd/system/gpucluster-declared-gpus.service"
    unit.write_text(
        "[Unit]\nDescription=Declared GPU device nodes of the test rack (no hardware behind them)\n"
        "Before=slurmd.service\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/bin/sh -c 'rm -f {nodes}; {script}'\n\n[Install]\nWantedBy=multi-user.target\n"
    )
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / unit.name
    if not link.is_symlink():
        link.symlink_to(f"/etc/systemd/system/{unit.name}")


INOTIFY_INSTANCES = Path("/proc/sys/fs/inotify/max_user_instances")
# A booted node's systemd, journald, logind and dbus hold 8 to 11 inotify instances, all charged to root on
# the host (the nodes have no user namespace). The kernel's default of 128 per user lets about 15 nodes boot;
# CI boots more than 20 at once (`make demo` beside `make test`) and the last ones never reached sshd. Hosts
# of many containers raise it (https://linuxcontainers.org/incus/docs/main/reference/server_settings/).
MIN_INOTIFY_INSTANCES = 8192


def allow_many_nodes() -> None:
    """Raise the host's inotify instances per user to MIN_INOTIFY_INSTANCES if it is lower (needs root)."""
    try:
        if int(INOTIFY_INSTANCES.read_text()) < MIN_INOTIFY_INSTANCES:
            INOTIFY_INSTANCES.write_text(f"{MIN_INOTIFY_INSTANCES}\n")
    except OSError as error:
        progress(f"cannot raise {INOTIFY_INSTANCES} ({error}): more than about 15 nodes at once may not boot")


def boot(node: Node, *, fresh_clock: bool = False, capabilities: tuple[str, ...] = ()) -> int:
    """Start systemd-nspawn --boot inside the node's own cgroup and namespace; return its PID.

    fresh_clock: a time namespace whose boot time is now. Containers share the host kernel's uptime, and
    slurmctld accepts a resumed cloud node only if it booted after the resume request.
    capabilities: more than nspawn's default set, e.g. CAP_NET_ADMIN for a node's own firewall.
    """
    allow_many_nodes()
    for directory in node.cgroup_dirs():
        directory.mkdir(parents=True, exist_ok=True)
    join = "; ".join(f"echo $$ > {d}/cgroup.procs" for d in node.cgroup_dirs())
    # A reboot inside the container ends nspawn with status 133 (systemd-nspawn(1), "EXIT STATUS"); the
    # loop boots it again, as a machine's firmware would, always with a fresh clock: slurmctld takes a
    # node back from `scontrol reboot` only once it reports a boot time after the request. Whole seconds
    # on both sides: a container back within the request's second was never taken back (seen in CI, the
    # play waited out the reboot timeout), so it waits 2 s first; real firmware takes minutes.
    fresh = "unshare --time --boottime -$(cut -d. -f1 /proc/uptime) "
    nspawn = (
        "systemd-nspawn --boot --register=no --keep-unit --console=passive "
        f"--machine={node.name} --directory={node.root} "
        # A host's PID 1 may raise the locked-memory limit for units (slurmd's LimitMEMLOCK=infinity); a
        # container cannot go past the hard limit it starts with. Where this machine itself lacks
        # CAP_SYS_RESOURCE (the dev machine does), nspawn cannot raise it either and nodes keep 8 MiB.
        "--rlimit=RLIMIT_MEMLOCK=infinity "
        + "".join(f"--capability={c} " for c in capabilities)
        + f"--network-namespace-path=/run/netns/{node_ns(node.rack, node.name)}"
    )
    # The shell stays as the parent (our PID) and hands SIGTERM on, so stop_node still shuts down cleanly.
    loop = (
        "trap 'kill -TERM $child 2>/dev/null; wait $child; exit 143' TERM; "
        f"clock='{'fresh' if fresh_clock else ''}'; rc=133; while [ $rc -eq 133 ]; do "
        f'if [ -n "$clock" ]; then {fresh}{nspawn} & else {nspawn} & fi; '
        "child=$!; wait $child; rc=$?; clock=fresh; if [ $rc -eq 133 ]; then sleep 2; fi; done; exit $rc"
    )
    with (node.state / "nspawn.log").open("ab") as log:
        process = subprocess.Popen(
            ["/bin/sh", "-c", f"{join}; {loop}"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return process.pid


def cgroup_pids(node: Node) -> set[int]:
    """PIDs still inside the node's cgroups: all of them descend from the nspawn we started."""
    pids: set[int] = set()
    for directory in node.cgroup_dirs():
        for procs in directory.rglob("cgroup.procs") if directory.exists() else []:
            pids.update(int(line) for line in procs.read_text().split())
    return pids


def kill_leftovers(node: Node) -> None:
    """SIGKILL what a node left behind when its nspawn did not shut it down in time."""
    for _ in range(50):
        pids = cgroup_pids(node)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    raise RuntimeError(f"processes {sorted(cgroup_pids(node))} of node {node.name} survive SIGKILL")


def remove_cgroup_dirs(node: Node) -> None:
    """Remove the node's (empty) cgroup directories, deepest first."""
    for directory in node.cgroup_dirs():
        for child in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if child.is_dir():
                child.rmdir()
        if directory.exists():
            directory.rmdir()


def cleanup_mounts_and_cgroups(node: Node) -> None:
    """Unmount the overlay and remove the node's cgroup and nspawn propagation directories."""
    kill_leftovers(node)
    if node.root.is_mount():
        run(["umount", "-l", str(node.root)], check=False)
    remove_cgroup_dirs(node)
    propagate = Path("/run/systemd/nspawn/propagate") / node.name
    if propagate.exists():
        run(["rm", "-rf", str(propagate)], check=False)
