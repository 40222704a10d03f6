"""GPU and fabric stack on a test rack (no GPUs, no HCAs): user space installs, nothing claims hardware.

The rack's cluster file is rewritten to declare 8 InfiniBand HCAs with IPoIB and n1 as subnet manager,
so net_infiniband has work to do; the profile stays `install_mode: userspace`. Its compute nodes are n1
and n3 (n2 retired, never booted), so the same converge proves a rack with a gap in its hostlist,
`n[1,3]`; the hostlists gpucluster reads are compared with the rack's `scontrol show hostnames`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from gpucluster.clusterfile import load
from gpucluster.clusterfile.hostlist import expand
from gpucluster.render import render
from gpucluster_rack.handlers import handlers_run, predicted
from gpucluster_rack.playbook import Playbook, converge
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.slurm_hostnames import HAND_BUILT, SUFFIXED, generated, scontrol_hostnames
from gpucluster_rack.slurm_state import slurm_nodes, wait_for
from tests.rack.conftest import require_rack_prerequisites

RACK = "g"
IPOIB_ADDRESS = "10.78.0.12"
N3_IPOIB_ADDRESS = "10.78.0.14"


@dataclass
class Converged:
    """The rack and its first two converges."""

    rack: Rack
    first: Playbook
    second: Playbook


def _run(rack: Rack, *extra: str) -> Playbook:
    # A ControlPath per rack: racks share host and user names, and ssh would reuse another rack's master.
    control = rack.state / "ssh-control"
    control.mkdir(exist_ok=True)
    return converge(rack, *extra, env={"ANSIBLE_SSH_CONTROL_PATH_DIR": str(control)})


def _declare_fabric(rack: Rack) -> None:
    cluster = yaml.safe_load(rack.cluster_file.read_text())
    onprem = cluster["onprem"]
    onprem["profiles"]["testnode"]["hcas"] = {"count": 8, "fabric": "ib-ndr400", "ipoib": True}
    onprem["ipoib_cidr"] = "10.78.0.0/24"
    onprem["subnet_manager"] = "n1"
    onprem["racks"][0]["nodes"][0]["ipoib_address"] = IPOIB_ADDRESS
    onprem["racks"][0]["nodes"][1]["ipoib_address"] = N3_IPOIB_ADDRESS
    rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))


@pytest.fixture(scope="module")
def gpu_rack() -> Iterator[Converged]:
    """Rack "g" (ctl, n1, n3) converged twice with the GPU and fabric stack; torn down after."""
    require_rack_prerequisites()
    booted = Rack(name=RACK, size=3, numbers=(1, 3))
    try:
        booted.up()
        _declare_fabric(booted)
        first = _run(booted)
        second = _run(booted) if first.rc == 0 else first
        yield Converged(booted, first, second)
    finally:
        down(RACK)


def _sh(rack: Rack, command: str) -> str:
    return rack.ssh("n1", command, check=False)


def test_first_converge_succeeds(gpu_rack: Converged) -> None:
    assert gpu_rack.first.rc == 0, gpu_rack.first.output[-6000:]
    assert set(gpu_rack.first.recap()) == {"ctl", "n1", "n3"}


def test_second_converge_changes_nothing(gpu_rack: Converged) -> None:
    assert gpu_rack.second.rc == 0, gpu_rack.second.output[-6000:]
    changed = {host: counts["changed"] for host, counts in gpu_rack.second.recap().items()}
    assert changed == {"ctl": 0, "n1": 0, "n3": 0}, gpu_rack.second.output[-6000:]


def test_check_mode_on_the_gpu_nodes_passes_unchanged(gpu_rack: Converged) -> None:
    # Limited to the rack's nodes: the GPU and fabric stack runs there.
    run = _run(gpu_rack.rack, "--check")
    assert run.rc == 0, run.output[-6000:]
    assert run.recap()["n1"]["changed"] == 0


def test_infiniband_tools_exist_and_find_no_hardware(gpu_rack: Converged) -> None:
    found = _sh(gpu_rack.rack, "command -v ibstat ibv_devices ibv_devinfo opensm")
    assert len(found.split()) == 4, found
    # No HCA: ibv_devices fails ("Function not implemented") and ibstat lists no CA.
    assert _sh(gpu_rack.rack, "ibv_devices >/dev/null 2>&1; echo $?").strip() != "0"
    assert _sh(gpu_rack.rack, "ibstat 2>/dev/null").strip() == ""
    limits = _sh(gpu_rack.rack, "cat /etc/security/limits.d/90-gpucluster-rdma.conf")
    assert "hard    memlock    unlimited" in limits


def test_ipoib_address_is_written_but_opensm_does_not_run(gpu_rack: Converged) -> None:
    network = _sh(gpu_rack.rack, "cat /etc/systemd/network/60-gpucluster-ib0.network")
    assert "Name=ib0" in network and f"Address={IPOIB_ADDRESS}/24" in network
    assert _sh(gpu_rack.rack, "systemctl is-active opensm").strip() != "active"
    assert _sh(gpu_rack.rack, "systemctl is-enabled opensm").strip() == "disabled"


def test_nccl_files_equal_the_rendered_text(gpu_rack: Converged) -> None:
    path = gpu_rack.rack.cluster_file
    rendered = render(load(path).cluster, "onprem", host="n1", source=str(path.resolve()))
    for name, dest in (
        ("nccl/nccl.conf", "/etc/nccl.conf"),
        ("nccl/fabric.env", "/etc/gpucluster/fabric.env"),
    ):
        assert _sh(gpu_rack.rack, f"cat {shlex.quote(dest)}") == rendered[name], dest
    assert "NCCL_IB_HCA" in rendered["nccl/nccl.conf"]


def test_driver_user_space_is_installed_held_and_honest(gpu_rack: Converged) -> None:
    assert _sh(gpu_rack.rack, "dpkg-query -W -f '${Status}' nvidia-smi") == "hold ok installed"
    sources = _sh(gpu_rack.rack, "grep -h '^Components:' /etc/apt/sources.list.d/*.sources")
    assert set(sources.splitlines()) == {"Components: main contrib non-free non-free-firmware"}
    # nvidia-smi exists but finds no driver: the stack claims no GPU.
    assert _sh(gpu_rack.rack, "nvidia-smi >/dev/null 2>&1; echo $?").strip() != "0"


def test_no_kernel_module_service_or_reboot_for_absent_hardware(gpu_rack: Converged) -> None:
    # /proc/modules is not readable inside nspawn; /sys/module lists the loaded modules too.
    modules = _sh(gpu_rack.rack, "ls /sys/module").split()
    assert modules and not [m for m in modules if m.startswith("nvidia")], modules
    for unit in ("nvidia-fabricmanager", "nvidia-persistenced", "nvidia-dcgm", "dcgm-exporter"):
        assert _sh(gpu_rack.rack, f"systemctl is-active {unit}").strip() != "active", unit
    present = _sh(
        gpu_rack.rack, "ls /etc/modprobe.d/blacklist-nouveau.conf /etc/modules-load.d/nvidia-peermem.conf"
    )
    assert present.strip() == ""
    # Userspace mode never reboots: neither the driver's reboot handler nor any step of node_reboot runs.
    assert "RUNNING HANDLER [gpu_nvidia_driver : Reboot after a driver change]" not in gpu_rack.first.output
    assert not re.search(r"TASK \[[\w.]*node_reboot : ", gpu_rack.first.output)


def _registered(rack: Rack) -> None:
    """Wait until slurmd on n1 and n3 has registered (idle; drained until acceptance, which fails here)."""
    states: dict[str, tuple[str, str]] = {}

    def idle() -> bool:
        states.update(slurm_nodes(rack, "n1", "n3"))
        return all(state.startswith("IDLE") for state, _ in states.values())

    wait_for("n1 and n3 registered, idle", idle, seen=lambda: states)


def test_a_rack_with_a_gap_registers_each_node_with_its_gpus(gpu_rack: Converged) -> None:
    rack = gpu_rack.rack
    assert "NodeName=n[1,3] " in rack.ssh("ctl", "grep ^NodeName= /etc/slurm/slurm.conf")
    for node in ("ctl", "n3"):
        assert "NodeName=n[1,3] Name=gpu" in rack.ssh(node, "cat /etc/slurm/gres.conf"), node
    _registered(rack)
    assert "Gres=gpu:h100:8" in rack.ssh("ctl", "scontrol show node n3")


def test_gpucluster_reads_hostlists_as_the_racks_slurm_does(gpu_rack: Converged) -> None:
    patterns = [*HAND_BUILT, *SUFFIXED, *generated()]
    version, slurm = scontrol_hostnames(gpu_rack.rack, patterns)
    suffix_read = version >= (23, 11)
    differ = []
    for pattern in patterns:
        ours = _expanded(pattern)
        theirs = slurm[pattern] if suffix_read or pattern not in SUFFIXED else ours
        if theirs != ours:
            differ.append(f"{pattern}: gpucluster {ours}, scontrol {slurm[pattern]}")
    assert not differ, "\n".join(differ)
    if not suffix_read:
        assert all(slurm[p] is None for p in SUFFIXED), (version, {p: slurm[p] for p in SUFFIXED})
    refused = [p for p in patterns if slurm[p] is None and p not in SUFFIXED]
    assert refused == ["n[3-1]", "n[a-b]", "n[0-70000]"], refused


def _expanded(pattern: str) -> list[str] | None:
    try:
        return expand(pattern)
    except ValueError:
        return None


def test_a_gres_change_on_the_gapped_rack_restarts_slurmd_on_n3_as_the_review_predicts(
    gpu_rack: Converged,
) -> None:
    """Half the declared GPUs: every node's own gres.conf line changes; the review and the converge agree."""
    rack = gpu_rack.rack
    before = rack.cluster_file.read_text()
    cluster = yaml.safe_load(before)
    cluster["onprem"]["profiles"]["testnode"]["gpus"]["count"] = 4
    after = yaml.safe_dump(cluster, sort_keys=False)
    review = {f.kind: f.hosts for f in predicted(rack.cluster_file, before, after)}
    # Slurm 22.05 keeps a registered node's old Gres on `scontrol reconfigure`: slurmctld restarts first.
    assert review.get("slurmd-restart") == ["n1", "n3"], review
    assert review.get("slurmctld-restart") == ["ctl"], review
    rack.cluster_file.write_text(after)
    run = _run(rack)
    assert run.rc == 0, run.output[-6000:]
    done = handlers_run(run.output)
    assert done.get("Restart slurmd") == {"n1", "n3"}, run.output[-6000:]
    assert done.get("Restart slurmctld") == {"ctl"}, done
    # Registered and valid with the new count. (22.05's Gres= line still shows the count kept in slurmctld's
    # saved state; its configured TRES, which scheduling counts, is the new one.) An IDLE+DRAIN+INVALID_REG
    # node also reads as idle, so wait on the registration itself.
    shown: dict[str, str] = {}

    def registered_valid() -> bool:
        shown.update({node: rack.ssh("ctl", f"scontrol show node {node}") for node in ("n1", "n3")})
        return all("gres/gpu=4" in text and "INVALID_REG" not in text for text in shown.values())

    wait_for("n1 and n3 registered valid with 4 GPUs", registered_valid, seen=lambda: shown)
