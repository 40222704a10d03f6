"""The harness leaves nothing behind: after down(), and when a killed run's rack is found at start."""

from __future__ import annotations

from pathlib import Path

from gpucluster_rack.network import rack_namespaces
from gpucluster_rack.rack import STATE_ROOT, Rack, _alive, down
from tests.rack.conftest import require_rack_prerequisites


def _leftovers(name: str, pids: list[int]) -> list[str]:
    found = [f"netns {ns}" for ns in rack_namespaces(name)]
    found += [
        f"mount {line.split()[1]}"
        for line in Path("/proc/mounts").read_text().splitlines()
        if f"{STATE_ROOT}/{name}/" in line
    ]
    found += [
        f"cgroup {h}" for h in ("systemd", "unified") if Path(f"/sys/fs/cgroup/{h}/gcr-{name}").exists()
    ]
    found += [f"pid {pid}" for pid in pids if _alive(pid)]
    if (STATE_ROOT / name).exists():
        found.append(f"state {STATE_ROOT / name}")
    return found


def test_stale_rack_is_cleared_at_start_and_down_leaves_nothing() -> None:
    require_rack_prerequisites()
    first = Rack(name="h", size=2, gpus_per_node=2)
    try:
        first.up()
        assert first.ssh("n1", "ls /dev/nvidia0 /dev/nvidia1").split() == ["/dev/nvidia0", "/dev/nvidia1"]
        stale_pids = list(first.pids.values())
        # A killed run never calls down(): the next up() must clear what it left.
        second = Rack(name="h", size=2, gpus_per_node=0)
        second.up()
        assert not [pid for pid in stale_pids if _alive(pid)]
        assert second.ssh("ctl", "hostname").strip() == "ctl"
        pids = list(second.pids.values())
    finally:
        down("h")
    assert _leftovers("h", pids) == []
