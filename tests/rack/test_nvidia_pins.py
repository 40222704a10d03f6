"""Pins are promises: the NVIDIA stack installed at exactly the pinned versions and held, on a test rack.

Rack "p" (ctl + n1 + n2) converges `install_mode: full` against a repository that mimics NVIDIA's CUDA
repositories (gpucluster_rack/nvidia_mimic.py: empty packages with NVIDIA's names and dependency shape,
each at the pinned and a newer release), built at test time and served inside the rack network. n1 runs the
Debian-style names of NVIDIA's debian12 repository, n2 the branch-suffixed names of its ubuntu repositories
(gpu_nvidia_driver_apt_naming in host_vars), so both hold logics run on Debian nodes. Reboots are deferred
(gpu_nvidia_driver_reboot: false): nspawn nodes share the host kernel and must not reboot.

n3 is not in the cluster file: the image playbook (ansible/playbooks/image.yml) runs there with the
variables the image stack passes (gpucluster.ansible_vars.image_vars), against the same mimic and a mimic of
AWS's EFA installer (gpucluster_rack/efa_mimic.py), and the sealed result is saved as the cloud node image
(gpucluster_rack/cloud_image.py) that emulated cloud instances boot from.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucluster import names
from gpucluster.ansible_vars import image_vars
from gpucluster.clusterfile import load
from gpucluster.utilization.exposition import parse_exposition
from gpucluster.utilization.series import ENGINE_ACTIVE
from gpucluster_rack import cloud_image, efa_mimic, known_load
from gpucluster_rack import nvidia_mimic as mimic
from gpucluster_rack.handlers import handlers_run
from gpucluster_rack.network import BRIDGE_ADDRESS, bridge_ns
from gpucluster_rack.playbook import Playbook, converge
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.sh import run
from gpucluster_rack.slurm_state import slurm_nodes, wait_for
from tests.conftest import ROOT
from tests.rack.conftest import require_rack_prerequisites

RACK = "p"
PORT = 8570
MIRROR = f"http://{BRIDGE_ADDRESS}:{PORT}"
MISSING_PIN = "570.999.99"
NODES = ("n1", "n2")
IMAGE_NODE = "n3"  # not in the cluster file: a fresh machine the image playbook runs on
OTHER_PLUGIN = "1.21.1"  # an aws-ofi-nccl pin the mimic installer does not bundle
# Prometheus on ctl scrapes every 5 s (the cluster file's lowest): `utilization` at a 5 s step then errs by at
# most one scrape at each end of a job, under 2% of the known loads' 300 s.
SCRAPE_S = 5
KNOWN_LOADS = (known_load.Load("n1", 4, 0.6, 300), known_load.Load("n2", 8, 0.3, 300))
KERNEL = subprocess.run(["uname", "-r"], capture_output=True, text=True, check=True).stdout.strip()

DEBIAN_DRIVER = {deb.name for deb in mimic.debian_driver(mimic.PINNED)} - {
    "nvidia-kernel-dkms",  # the proprietary flavour: open modules are asked for
    "cuda-drivers",
    f"cuda-drivers-{mimic.BRANCH}",
    f"cuda-drivers-fabricmanager-{mimic.BRANCH}",
}
UBUNTU_DRIVER = {deb.name for deb in mimic.ubuntu_driver(mimic.PINNED)} - {
    f"cuda-drivers-{mimic.BRANCH}",
    f"nvidia-driver-{mimic.BRANCH}",
    f"nvidia-dkms-{mimic.BRANCH}",
    f"cuda-drivers-fabricmanager-{mimic.BRANCH}",
}
DRIVER = {"n1": DEBIAN_DRIVER, "n2": UBUNTU_DRIVER}
STACK = {
    "cuda-toolkit-12-8": f"{mimic.CUDA[0]}-1",
    "cuda-toolkit-12-8-config-common": f"{mimic.CUDA[0]}-1",
    # NVIDIA's toolkit depends on its components with >=: they come at the newest build, then stay.
    "cuda-nvcc-12-8": f"{mimic.NVCC[1]}-1",
    "libnccl2": mimic.NCCL[0],
    "libnccl-dev": mimic.NCCL[0],
    "datacenter-gpu-manager-4-core": mimic.DCGM[0],
    "datacenter-gpu-manager-4-cuda12": mimic.DCGM[0],
    "datacenter-gpu-manager-exporter": mimic.EXPORTER[0],
    f"linux-image-{KERNEL}": mimic.KERNEL_REVISIONS[0],
    f"linux-headers-{KERNEL}": mimic.KERNEL_REVISIONS[0],
}


@dataclass
class Pinned:
    """The rack, the refused converge and what it left, two converges, PID 1's start time per node."""

    rack: Rack
    refused: Playbook
    after_refusal: dict[str, list[str]]
    first: Playbook
    second: Playbook
    boot_before: dict[str, str]
    image_refused: Playbook
    image_after_refusal: list[str]
    image_build: Playbook
    image: cloud_image.CloudImage | None
    load_jobs: dict[str, str] = field(default_factory=dict)  # the known loads' Slurm jobs, by node


def _run(rack: Rack, *extra: str) -> Playbook:
    control = rack.state / "ssh-control"
    control.mkdir(exist_ok=True)
    return converge(rack, *extra, env={"ANSIBLE_SSH_CONTROL_PATH_DIR": str(control)})


def _sh(rack: Rack, node: str, command: str) -> str:
    return rack.ssh(node, command, check=False)


def _write_cluster_file(rack: Rack, driver: str) -> None:
    cluster = yaml.safe_load(rack.cluster_file.read_text())
    cluster["versions"].update(
        nvidia_driver_branch=mimic.BRANCH,
        nvidia_driver=driver,
        cuda=mimic.CUDA[0],
        nccl="2.26.2-1",
        dcgm=mimic.DCGM[0].removeprefix("1:").split("-")[0],
        efa_installer=efa_mimic.INSTALLER,
        aws_ofi_nccl=efa_mimic.AWS_OFI_NCCL,
    )
    onprem = cluster["onprem"]
    onprem["package_mirror"] = MIRROR
    profile = onprem["profiles"]["testnode"]
    profile.update(install_mode="full", nvswitch=True)
    profile["hcas"] = {"count": 8, "fabric": "ib-ndr400", "stack": "rdma-core", "gpudirect_rdma": True}
    cluster["monitoring"] = {"enabled": True, "scrape_interval_s": SCRAPE_S}
    rack.cluster_file.write_text(yaml.safe_dump(cluster, sort_keys=False))


def _write_ansible_vars(rack: Rack) -> None:
    """group_vars/host_vars next to the cluster file (the inventory source): deferred reboots, n2's naming."""
    (rack.state / "group_vars").mkdir(exist_ok=True)
    (rack.state / "group_vars" / "all.yml").write_text("gpu_nvidia_driver_reboot: false\n")
    (rack.state / "host_vars").mkdir(exist_ok=True)
    (rack.state / "host_vars" / "n2.yml").write_text(
        yaml.safe_dump(
            {
                "gpu_nvidia_driver_apt_naming": "ubuntu",
                "gpu_nvidia_driver_repo_url": f"{MIRROR}/{mimic.TREES['ubuntu']}/",
            }
        )
    )


def _prepare_nodes(rack: Rack) -> None:
    """What a site's nodes have: a direct route to the mirror, the running kernel's image package."""
    image = f"{MIRROR}/{mimic.TREES['debian']}/linux-image-{KERNEL}_{mimic.KERNEL_REVISIONS[0]}_amd64.deb"
    for node in (*NODES, IMAGE_NODE):
        rack.ssh(
            node, f"echo 'Acquire::http::Proxy::{BRIDGE_ADDRESS} \"DIRECT\";' > /etc/apt/apt.conf.d/82mimic"
        )
        fetch = f"import urllib.request; urllib.request.urlretrieve('{image}', '/tmp/image.deb')"
        rack.ssh(node, f'python3 -c "{fetch}" && dpkg -i /tmp/image.deb >/dev/null && rm /tmp/image.deb')
    # unattended-upgrades on n1 only: the role blacklists the stack there and writes nothing on n2.
    rack.ssh(
        "n1",
        "apt-get -q update >/dev/null"
        " && apt-get -y -q install --no-install-recommends unattended-upgrades >/dev/null",
    )


def _wait_for_mirror(rack: Rack) -> None:
    probe = f"import urllib.request; urllib.request.urlopen('{MIRROR}/')"
    rack.ssh(
        "n1", f'for i in $(seq 50); do python3 -c "{probe}" 2>/dev/null && exit 0; sleep 0.2; done; exit 1'
    )


def _pid1_start(rack: Rack, node: str) -> str:
    return _sh(rack, node, "cut -d' ' -f22 /proc/1/stat").strip()


@pytest.fixture(scope="module")
def pinned() -> Iterator[Pinned]:
    """Rack "p" with the mimic served: a refused converge (missing pin), then two converges at the pin."""
    require_rack_prerequisites()
    booted = Rack(name=RACK, size=4, declared=3)
    server: subprocess.Popen[bytes] | None = None
    try:
        booted.up()
        root = booted.state / "mimic"
        mimic.build(root, KERNEL)
        efa_fingerprint = efa_mimic.build(root / "efa")
        http = ["python3", "-m", "http.server", "--bind", BRIDGE_ADDRESS, "--directory", str(root), str(PORT)]
        server = subprocess.Popen(
            ["ip", "netns", "exec", bridge_ns(RACK), *http],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_mirror(booted)
        _prepare_nodes(booted)
        _write_ansible_vars(booted)
        boot_before = {node: _pid1_start(booted, node) for node in NODES}
        _write_cluster_file(booted, MISSING_PIN)
        refused = _run(booted, "--limit", "slurm_compute", "--tags", "gpu_nvidia_driver")
        after_refusal = {node: _nvidia_installed(booted, node) for node in NODES}
        _write_cluster_file(booted, mimic.PINNED)
        first = _run(booted)
        second = _run(booted) if first.rc == 0 else first
        load_jobs = _start_known_loads(booted) if second.rc == 0 else {}
        variables = _image_vars(booted, efa_fingerprint)
        image_refused = _build_image(
            booted, variables, "--tags", "net_efa", "-e", f"net_efa_aws_ofi_nccl_version={OTHER_PLUGIN}"
        )
        image_after_refusal = _efa_installed(booted)
        # A reused build machine may hold a munge key: the seal must remove it as it removes the host keys.
        booted.ssh(
            IMAGE_NODE, "install -d -m 0700 /etc/munge && head -c 1024 /dev/urandom > /etc/munge/munge.key"
        )
        image_build = _build_image(booted, variables)
        booted.stop_node(IMAGE_NODE)
        image = cloud_image.save(booted.node(3), variables) if image_build.rc == 0 else None
        yield Pinned(
            booted,
            refused,
            after_refusal,
            first,
            second,
            boot_before,
            image_refused,
            image_after_refusal,
            image_build,
            image,
            load_jobs,
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        down(RACK)


def _start_known_loads(rack: Rack) -> dict[str, str]:
    """Slurm jobs with a known GPU load on n1 and n2; they run while the image is built."""
    # Acceptance is not this module's subject: the nodes go into service directly.
    rack.ssh("ctl", "scontrol update nodename=n1,n2 state=RESUME")
    return {each.node: known_load.submit(rack, "ctl", each) for each in KNOWN_LOADS}


def _image_vars(rack: Rack, efa_fingerprint: str) -> dict[str, object]:
    """What the image stack passes (image_vars of the rack's cluster file), pointed at the rack's mimics."""
    cluster = load(rack.cluster_file).cluster
    efa = f"{MIRROR}/efa"
    return {
        **image_vars(cluster),
        "gpucluster_image_hosts": IMAGE_NODE,
        "gpu_nvidia_driver_package_mirror": MIRROR,
        "gpu_nvidia_driver_nvswitch": True,
        "net_efa_installer_url": f"{efa}/aws-efa-installer-{efa_mimic.INSTALLER}.tar.gz",
        "net_efa_installer_key_url": f"{efa}/aws-efa-installer.key",
        "net_efa_installer_key_fingerprint": efa_fingerprint,
        # nspawn nodes share the host's kernel: no module is built or loaded.
        "net_efa_installer_options": ["--yes", "--skip-kmod", "--no-verify"],
    }


def _build_image(rack: Rack, variables: dict[str, object], *extra: str) -> Playbook:
    """Run the image playbook on the image node, as EC2 Image Builder runs it (inventory of one host)."""
    return Playbook(*cloud_image.build(rack, IMAGE_NODE, variables, *extra))


def _efa_installed(rack: Rack) -> list[str]:
    """EFA packages installed on the image node, and /opt/amazon if it exists."""
    installed = _installed(rack, IMAGE_NODE)
    return [name for name in efa_mimic.installed_packages() if name in installed] + _sh(
        rack, IMAGE_NODE, "ls -d /opt/amazon 2>/dev/null"
    ).split()


def _installed(rack: Rack, node: str) -> dict[str, str]:
    listing = _sh(rack, node, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    rows = (line.split() for line in listing.splitlines())
    return {row[1]: row[2] for row in rows if len(row) == 3 and row[0][1] == "i"}


def _nvidia_installed(rack: Rack, node: str) -> list[str]:
    """Installed NVIDIA packages and apt preferences files: what a refused converge must not leave."""
    pattern = r"(nvidia|libnvidia|libcuda|cuda|libnccl|datacenter)"
    names = [name for name in _installed(rack, node) if re.match(pattern, name)]
    return names + _sh(rack, node, "ls /etc/apt/preferences.d/").split()


def test_a_pin_the_repository_lacks_is_refused_before_anything_is_installed(pinned: Pinned) -> None:
    assert pinned.refused.rc != 0
    output = pinned.refused.output
    for needed in (MISSING_PIN, f"{mimic.NEWER}-1", "Nothing was installed"):
        assert needed in output, output[-4000:]
    assert pinned.after_refusal == {node: [] for node in NODES}


def test_first_converge_succeeds(pinned: Pinned) -> None:
    assert pinned.first.rc == 0, pinned.first.output[-6000:]


def test_every_package_is_at_the_pinned_version(pinned: Pinned) -> None:
    for node in NODES:
        installed = _installed(pinned.rack, node)
        driver = {name: version for name, version in installed.items() if name in DRIVER[node]}
        assert driver == dict.fromkeys(DRIVER[node], f"{mimic.PINNED}-1"), node
        assert {name: installed.get(name) for name in STACK} == STACK, node
        # Nothing of the other naming shape, nor the proprietary modules, came along.
        other = (UBUNTU_DRIVER | DEBIAN_DRIVER) - DRIVER[node] - {f"nvidia-fabricmanager-{mimic.BRANCH}"}
        assert not other & set(installed), (node, other & set(installed))


def test_driver_branch_cuda_nccl_dcgm_and_kernel_are_held(pinned: Pinned) -> None:
    for node in NODES:
        held = set(_sh(pinned.rack, node, "apt-mark showhold").split())
        assert DRIVER[node] | set(STACK) <= held, (node, (DRIVER[node] | set(STACK)) - held)


def test_apt_get_upgrade_moves_nothing_although_newer_builds_are_offered(pinned: Pinned) -> None:
    for node in NODES:
        offered = _sh(pinned.rack, node, f"apt-cache madison nvidia-fabricmanager-{mimic.BRANCH} libnccl2")
        assert f"{mimic.NEWER}-1" in offered and mimic.NCCL[1] in offered, offered
        for command in ("upgrade", "dist-upgrade"):
            simulated = _sh(pinned.rack, node, f"apt-get -s {command}")
            assert not re.search(r"^(Inst|Remv) ", simulated, re.M), (node, command, simulated)


def test_second_converge_changes_nothing(pinned: Pinned) -> None:
    assert pinned.second.rc == 0, pinned.second.output[-6000:]
    changed = {host: counts["changed"] for host, counts in pinned.second.recap().items()}
    assert changed == {"ctl": 0, "n1": 0, "n2": 0}, pinned.second.output[-6000:]


def test_the_reboot_is_deferred_and_reported_not_done(pinned: Pinned) -> None:
    for node in NODES:
        assert "reboot" in _sh(pinned.rack, node, "cat /run/gpucluster-reboot-pending"), node
        assert _pid1_start(pinned.rack, node) == pinned.boot_before[node], node
    assert "Record that a reboot into the new driver is pending" in pinned.first.output


def test_gpudirect_rdma_uses_dmabuf_without_nvidia_peermem(pinned: Pinned) -> None:
    # rdma-core (no peer-memory API), open modules of branch 570 and the host's kernel (>= 5.12).
    assert pinned.first.output.count("GPUDirect RDMA: dmabuf") == len(NODES), pinned.first.output[-6000:]
    for node in NODES:
        assert "nvidia" not in _sh(pinned.rack, node, "ls /etc/modules-load.d/"), node
        assert not [m for m in _sh(pinned.rack, node, "ls /sys/module").split() if m.startswith("nvidia")]


def test_unattended_upgrades_is_kept_away_where_installed(pinned: Pinned) -> None:
    config = _sh(pinned.rack, "n1", "apt-config dump Unattended-Upgrade::Package-Blacklist")
    for pattern in ("nvidia-", "libnvidia-", "cuda-", "libnccl", "datacenter-gpu-manager", "linux-image-"):
        assert f'"{pattern}"' in config, (pattern, config)
    assert _sh(pinned.rack, "n2", "ls /etc/apt/apt.conf.d/").count("unattended") == 0


def test_services_of_the_pinned_packages_run(pinned: Pinned) -> None:
    # The mimic's daemons are placeholders: this shows the roles start and enable the packages' units.
    for node in NODES:
        for unit in ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "dcgm-exporter"):
            assert _sh(pinned.rack, node, f"systemctl is-active {unit}").strip() == "active", (node, unit)


def _prometheus(rack: Rack, path: str) -> Any:
    """An answer of ctl's Prometheus API, asked from inside the rack's network."""
    url = f"http://{rack.node(0).address}:9090{path}"
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('{url}').read().decode())\""
    answer = json.loads(_sh(rack, "ctl", fetch))
    assert answer["status"] == "success", answer
    return answer["data"]


def test_prometheus_on_ctl_scrapes_every_node_labelled_with_site_node_group_and_node(pinned: Pinned) -> None:
    """Node exporter on all three hosts and the DCGM exporter (mimic) on both compute nodes are up."""
    rack = pinned.rack
    up = [(r["metric"], r["value"][1]) for r in _prometheus(rack, "/api/v1/query?query=up")["result"]]
    found = {(m["job"], m["node"]): (m["site"], m["node_group"], value) for m, value in up}
    assert found == {
        ("node", "ctl"): ("rack", "service", "1"),
        **{("node", node): ("rack", f"rack-{RACK}", "1") for node in NODES},
        **{("dcgm", node): ("rack", f"rack-{RACK}", "1") for node in NODES},
    }, up
    groups = {g["name"] for g in _prometheus(rack, "/api/v1/rules")["groups"]}
    assert {"gpucluster-nodes", "gpucluster-gpus"} <= groups, groups


def _utilization(rack: Rack, *source: str, in_rack: bool = True) -> dict[str, Any]:
    """`gpucluster utilization --format json` on this machine (in the rack's network namespace: in_rack)."""
    argv = [
        sys.executable,
        "-m",
        "gpucluster",
        "utilization",
        str(rack.cluster_file),
        *source,
        "--format",
        "json",
    ]
    done = run([*(["ip", "netns", "exec", bridge_ns(RACK)] if in_rack else []), *argv], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    figures: dict[str, Any] = json.loads(done.stdout)["overall"]
    return figures


def test_utilization_reports_the_known_load_of_two_slurm_jobs_within_2_percent(pinned: Pinned) -> None:
    """Two jobs held 12 GPUs for 300 s at 60% and 30% engine activity; Prometheus scraped the exporter mimic.

    Expected: allocated = GPUs × the jobs' elapsed time (sacct), active = GPUs × fraction × the load's own
    stamps. Nothing else loaded a GPU or mapped a job before this test (the job-77 check comes after it).
    """
    rack = pinned.rack
    assert pinned.load_jobs, "the converge at the pin failed: no known load ran"
    for job in pinned.load_jobs.values():
        wait_for(f"job {job} ends", functools.partial(known_load.finished, rack, "ctl", job), timeout_s=900)
    time.sleep(3 * SCRAPE_S)  # the last scrapes after the epilogs
    held = [known_load.held(rack, "ctl", pinned.load_jobs[each.node], each) for each in KNOWN_LOADS]
    allocated = sum(h.allocated_gpu_s for h in held) / 3600
    active = sum(h.active_gpu_s for h in held) / 3600
    export = rack.state / "utilization.json"
    url = f"http://{rack.node(0).address}:9090"
    measured = _utilization(
        rack, "--prometheus", url, "--days", "1", "--step-s", str(SCRAPE_S), "--save", str(export)
    )
    assert measured["allocated_gpu_hours"] == pytest.approx(allocated, rel=0.02), (measured, allocated)
    assert measured["active_gpu_hours"] == pytest.approx(active, rel=0.02), (measured, active)
    idle = allocated - active
    assert measured["idle_allocated_gpu_hours"] == pytest.approx(idle, rel=0.02), (measured, idle)
    # The saved export gives the same figures again, off the rack's network.
    again = _utilization(rack, "--export", str(export), in_rack=False)
    assert again["active_gpu_hours"] == pytest.approx(measured["active_gpu_hours"])


def test_the_exporter_serves_the_role_s_fields_with_the_job_and_the_load_of_each_gpu(pinned: Pinned) -> None:
    """The unit's counters file and job-mapping directory, read by the exporter mimic, scraped from ctl.

    The node's installed Prolog maps job 77 to GPUs 0 and 1 (as slurmd would run it), and the mimic's load
    tool keeps those GPUs 80% busy; gpucluster's own parser reads the page.
    """
    env = "SLURM_JOB_ID=77 SLURM_JOB_GPUS=0,1"
    busy = f"env {env} gpucluster-mimic-gpu-load 0.8 60 >/dev/null 2>&1 &"
    _sh(pinned.rack, "n1", f"env {env} /etc/slurm/prolog && ({busy}) && sleep 2")
    try:
        address = pinned.rack.node(1).address
        url = f"http://{address}:9400/metrics"
        fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('{url}').read().decode())\""
        page = parse_exposition(_sh(pinned.rack, "ctl", fetch), "n1:9400/metrics")
    finally:
        _sh(pinned.rack, "n1", f"pkill -f '[g]pucluster-mimic-gpu-load'; env {env} /etc/slurm/epilog")
    active = {(s.labels["gpu"], s.labels.get("hpc_job", "")): s.value for s in page.of(ENGINE_ACTIVE)}
    assert active[("0", "77")] == active[("1", "77")] == pytest.approx(0.8), active
    assert all(value == 0 for (gpu, job), value in active.items() if gpu not in {"0", "1"}), active
    # Only the role's counters file turns these on (the package's default list has them commented out).
    assert page.of("DCGM_FI_PROF_SM_OCCUPANCY") and page.of("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert {s.labels["Hostname"] for s in page.samples} == {"n1"}


def test_the_image_refuses_a_plugin_pin_its_efa_installer_does_not_bundle(pinned: Pinned) -> None:
    output = pinned.image_refused.output
    assert pinned.image_refused.rc != 0
    for needed in (OTHER_PLUGIN, f"{efa_mimic.AWS_OFI_NCCL}-1", efa_mimic.INSTALLER, "Nothing was installed"):
        assert needed in output, output[-4000:]
    assert pinned.image_after_refusal == []


def test_the_image_playbook_builds_the_image(pinned: Pinned) -> None:
    assert pinned.image_build.rc == 0, pinned.image_build.output[-6000:]
    assert pinned.image is not None


def _image(pinned: Pinned) -> cloud_image.CloudImage:
    if pinned.image is None:
        pytest.fail("the image playbook failed: no image was saved")
    return pinned.image


def _in_image(root: Path, command: str) -> str:
    return run(["chroot", str(root), "/bin/sh", "-c", command]).stdout


def test_the_image_has_every_pin_installed_and_held(pinned: Pinned) -> None:
    with cloud_image.view(_image(pinned)) as root:
        # Read-only: dpkg-query, not apt-mark (apt wants a writable /tmp). Status "hi": held, installed.
        listing = _in_image(root, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
        record = (root / "opt/amazon/efa_installed_packages").read_text()
    rows = [line.split() for line in listing.splitlines()]
    installed = {row[1]: row[2] for row in rows if len(row) == 3 and row[0][1] == "i"}
    held = {row[1] for row in rows if len(row) == 3 and row[0][0] == "h"}
    expected = {
        **dict.fromkeys(DEBIAN_DRIVER, f"{mimic.PINNED}-1"),
        **STACK,
        **efa_mimic.installed_packages(),
    }
    assert {name: installed.get(name) for name in expected} == expected
    slurm = {name: installed.get(name, "") for name in ("slurm-client", "slurmd", "munge")}
    assert re.match(r"^22\.05\.8-", slurm["slurm-client"]) and slurm["slurmd"] == slurm["slurm-client"], slurm
    assert {*expected, "slurm-client", "slurmd"} <= held, {*expected, "slurm-client", "slurmd"} - held
    assert f"# EFA installer version: {efa_mimic.INSTALLER}" in record
    assert {"cloud-init", "awscli", "python3-boto3"} <= set(installed)


def test_the_image_carries_the_node_health_program_that_its_python_runs(pinned: Pinned) -> None:
    """The rendered Prolog runs it (too large for user data): this collection's copy, executable."""
    with cloud_image.view(_image(pinned)) as root:
        program = root / names.HEALTH_PROGRAM.lstrip("/")
        assert program.read_bytes() == (ROOT / "gpucluster/health/node_program.py").read_bytes()
        assert program.stat().st_mode & 0o777 == 0o755
        usage = _in_image(root, f"{names.HEALTH_PROGRAM} --help")
    assert "--when {prolog,epilog,periodic}" in usage


def test_the_image_carries_no_secret_and_no_cluster_state(pinned: Pinned) -> None:
    image = _image(pinned)
    with cloud_image.view(image) as root:
        assert not (root / "etc/munge/munge.key").exists()
        assert not list((root / "etc/ssh").glob("ssh_host_*"))
        assert not (root / "root/.ssh/authorized_keys").exists()
        assert (root / "etc/machine-id").read_text() == ""
        assert (root / "etc/hostname").read_text().strip() == "localhost"
        for node_file in (
            "etc/slurm/slurm.conf",
            "etc/slurm/gres.conf",
            "etc/nccl.conf",
            "etc/gpucluster/fabric.env",
        ):
            assert not (root / node_file).exists(), node_file
        # slurmd starts only when the node has joined (its name, key and slurm.conf come then).
        assert not (root / "etc/systemd/system/multi-user.target.wants/slurmd.service").exists()
        cluster_name = f"testrack{RACK}"
        found = run(
            ["grep", "-rl", "--", cluster_name, str(root / "etc"), str(root / "var/lib")], check=False
        )
        assert found.stdout == "", found.stdout
    assert image.manifest["gpucluster_image_hosts"] == IMAGE_NODE


# ------------------------------------------------------------------------------ rolling driver upgrades


@dataclass
class Rolled:
    """A driver bump converged while a job ran on n2: the job, the run, and which nodes kept /run."""

    job: str
    run: Playbook
    booted_before: dict[str, bool]


BOOT_MARKER = "/run/gpucluster-test-before-the-roll"  # /run is empty after a reboot


def _slurm_node(rack: Rack, node: str) -> tuple[str, str]:
    return slurm_nodes(rack, node)[node]


def _job_state(rack: Rack, job: str) -> str:
    return _sh(rack, "ctl", f"squeue -h -j {job} -o %T").strip()


@pytest.fixture(scope="module")
def rolled(pinned: Pinned) -> Rolled:
    """The pin bumped to the mimic's newer release and reboots allowed, with a job running on n2."""
    rack = pinned.rack
    if pinned.second.rc != 0:
        pytest.fail("the converge at the pin failed: nothing to roll")
    # The known loads put the nodes into service already (a second RESUME of an idle node is refused).
    wait_for("n1 and n2 are idle", lambda: {_slurm_node(rack, n)[0] for n in NODES} == {"IDLE"})
    job = rack.ssh("ctl", "sbatch --parsable -w n2 -N1 --wrap 'sleep 1200'").strip()
    wait_for("the job runs on n2", lambda: _job_state(rack, job) == "RUNNING")
    for node in NODES:
        rack.ssh(node, f"touch {BOOT_MARKER}")
    (rack.state / "group_vars" / "all.yml").write_text("gpu_nvidia_driver_reboot: true\n")
    _write_cluster_file(rack, mimic.NEWER)
    run = _run(rack)
    booted_before = {
        node: _sh(rack, node, f"test -e {BOOT_MARKER} && echo yes").strip() == "yes" for node in NODES
    }
    return Rolled(job, run, booted_before)


_BANNER = re.compile(r"^(?:RUNNING HANDLER|TASK|PLAY) \[(.*?)\]", re.M)
_OK_OR_CHANGED = re.compile(r"^(?:changed|ok): \[([^\]\s]+)(?: -> [^\]]+)?\]", re.M)


def _node_reboot_steps(output: str) -> dict[str, set[str]]:
    """{task of role node_reboot: hosts it ran on (ok or changed)} from the default callback's output."""
    runs: dict[str, set[str]] = {}
    banners = list(_BANNER.finditer(output))
    for banner, following in zip(banners, [*banners[1:], None], strict=True):
        role, _, name = banner.group(1).rpartition(" : ")
        if not role.endswith("node_reboot"):
            continue
        body = output[banner.end() : following.start() if following else len(output)]
        runs.setdefault(name, set()).update(_OK_OR_CHANGED.findall(body))
    return {name: hosts for name, hosts in runs.items() if hosts}


def test_a_driver_bump_reboots_the_idle_node_through_slurm(rolled: Rolled) -> None:
    assert rolled.run.rc == 0, rolled.run.output[-6000:]
    assert rolled.booted_before["n1"] is False  # n1 rebooted
    done = _node_reboot_steps(rolled.run.output)
    assert done.get("Ask slurmctld to reboot the node once it is idle") == {"n1"}, done
    assert done.get("Wait until slurmctld takes the node back, after its reboot and boot check") == {"n1"}


def test_the_rebooted_node_runs_the_new_driver_and_is_back_in_service(pinned: Pinned, rolled: Rolled) -> None:
    rack = pinned.rack
    installed = _installed(rack, "n1")
    assert {name: installed.get(name) for name in DEBIAN_DRIVER} == dict.fromkeys(
        DEBIAN_DRIVER, f"{mimic.NEWER}-1"
    )
    assert set(_sh(rack, "n1", "nvidia-smi --query-gpu=driver_version --format=csv,noheader").split()) == {
        mimic.NEWER
    }
    assert _sh(rack, "n1", "cat /etc/gpucluster/nvidia-driver.pin").strip() == mimic.NEWER
    assert set(_sh(rack, "n1", "apt-mark showhold").split()) >= DEBIAN_DRIVER  # held again after the upgrade
    journal = _sh(rack, "n1", "journalctl -b -u gpucluster-driver-check --no-pager -o cat")
    assert f"NVML reports driver {mimic.NEWER} on every GPU, as pinned" in journal, journal
    assert _slurm_node(rack, "n1") == ("IDLE", "")
    log = _sh(rack, "ctl", "grep -i reboot /var/log/slurm/slurmctld.log")
    assert "n1" in log, log


def test_a_node_running_a_job_is_deferred_not_waited_on_and_its_job_keeps_running(
    pinned: Pinned, rolled: Rolled
) -> None:
    rack = pinned.rack
    assert f"n2 runs job(s) {rolled.job}; the next run takes it" in rolled.run.output, rolled.run.output[
        -6000:
    ]
    assert _job_state(rack, rolled.job) == "RUNNING"
    assert rolled.booted_before["n2"] is True
    installed = _installed(rack, "n2")
    assert {name: installed.get(name) for name in UBUNTU_DRIVER} == dict.fromkeys(
        UBUNTU_DRIVER, f"{mimic.PINNED}-1"
    )
    assert _sh(rack, "n2", "cat /etc/gpucluster/nvidia-driver.pin").strip() == mimic.PINNED
    assert _slurm_node(rack, "n2")[0] in {"ALLOCATED", "MIXED"}  # not drained


def test_a_driver_put_at_another_release_by_hand_is_reinstalled_at_the_pin_and_the_slot_released(
    pinned: Pinned, rolled: Rolled
) -> None:
    """n1 runs the pinned (newer) release; someone unholds its driver and installs the older one by hand."""
    rack = pinned.rack
    packages = sorted(DEBIAN_DRIVER)
    older = " ".join(f"{name}={mimic.PINNED}-1" for name in packages)
    rack.ssh(
        "n1",
        f"apt-mark unhold {' '.join(packages)} >/dev/null && DEBIAN_FRONTEND=noninteractive"
        f" apt-get install -y -q --allow-downgrades --no-install-recommends {older} >/dev/null",
        timeout=300,
    )
    assert {_installed(rack, "n1").get(name) for name in packages} == {f"{mimic.PINNED}-1"}
    rack.ssh("n1", f"touch {BOOT_MARKER}")
    run = _run(rack, "--limit", "n1")
    assert run.rc == 0, run.output[-6000:]
    installed = _installed(rack, "n1")
    assert {name: installed.get(name) for name in packages} == dict.fromkeys(packages, f"{mimic.NEWER}-1")
    assert set(_sh(rack, "n1", "apt-mark showhold").split()) >= DEBIAN_DRIVER
    assert _sh(rack, "n1", f"test -e {BOOT_MARKER} && echo yes").strip() == ""  # it rebooted into the pin
    assert _node_reboot_steps(run.output).get("Ask slurmctld to reboot the node once it is idle") == {"n1"}
    done = handlers_run(run.output)
    assert "Restart slurmd" not in done and "Restart munge" not in done, done
    assert _slurm_node(rack, "n1") == ("IDLE", "")  # the slot is given back: not drained


def _changed_tasks(output: str, host: str) -> list[str]:
    """The tasks and handlers that reported a change on host, from ansible-playbook's output."""
    found, current = [], ""
    for line in output.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            current = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith(f"changed: [{host}]"):
            found.append(current)
    return found


def test_after_the_roll_a_node_is_unchanged_and_one_whose_driver_does_not_load_stays_out_of_slurm(
    pinned: Pinned, rolled: Rolled
) -> None:
    rack = pinned.rack
    rack.ssh("ctl", f"scancel {rolled.job}")
    wait_for("n2 is idle", lambda: _slurm_node(rack, "n2")[0] == "IDLE")
    # A DKMS build that failed for the new release: no module loads at the next boot.
    rack.ssh("n2", f"mkdir -p {Path(mimic.NO_MODULE_FLAG).parent} && touch {mimic.NO_MODULE_FLAG}")
    run = _run(rack, "--limit", "n1,n2", "--tags", "gpu_nvidia_driver")
    assert run.rc != 0
    assert _changed_tasks(run.output, "n1") == [], run.output[-6000:]
    state, reason = _slurm_node(rack, "n2")
    assert state.startswith("DOWN"), (state, reason)
    assert reason.startswith("gpucluster boot check: nvidia-smi failed (9)"), reason
    assert reason.endswith(f"pinned {mimic.NEWER}"), reason
    assert reason in run.output, run.output[-6000:]
    assert _sh(rack, "n2", "systemctl is-active slurmd").strip() != "active"
    assert _sh(rack, "n2", f"test -e {BOOT_MARKER} && echo yes").strip() == ""  # it did reboot
