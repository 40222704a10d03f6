"""gpu_nvidia_driver's names and plan: packages per OS and naming shape, each pending step, each check.

The filters are called as Ansible loads them (tests/ansible/filter_plugins.py); the bodies are the files'
text as the role writes them (vars/main.yml).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.filter_plugins import filters
from tests.ansible.role_vars import DEBIAN, ROCKY, file_entry, node_state

FILTERS = filters("gpu_nvidia_driver_plan.py")
UBUNTU = {
    **DEBIAN,
    "distribution": "Ubuntu",
    "distribution_major_version": "24",
    "distribution_version": "24.04",
}
KERNEL = "6.1.0-37-cloud-amd64"
VERSION = "580.126.09"
BODIES = {
    "sources": "Types: deb\n",
    "preferences": "Package: /nvidia/\n",
    "unattended": "Unattended-Upgrade::Package-Blacklist {};\n",
    "blacklist": "blacklist nouveau\n",
}
DEBIAN_FULL = [
    "nvidia-driver",
    "nvidia-kernel-open-dkms",
    "nvidia-persistenced",
    "nvidia-smi",
    "libcuda1",
    "libnvidia-ml1",
]
SOURCES = "/etc/apt/sources.list.d/cuda.sources"
PREFERENCES = "/etc/apt/preferences.d/gpucluster-nvidia-driver.pref"
UNATTENDED = "/etc/apt/apt.conf.d/51gpucluster-nvidia-unattended-upgrades"
KEY = "/etc/apt/keyrings/cuda.asc"
BLACKLIST = "/etc/modprobe.d/blacklist-nouveau.conf"
PEERMEM_CONF = "/etc/modules-load.d/nvidia-peermem.conf"


def _inputs(**change: Any) -> dict[str, Any]:
    """A Debian 12 full-mode node pinned to 580.126.09 with open modules, with `change` applied."""
    facts = {**DEBIAN, "kernel": KERNEL, **change.pop("facts", {})}
    return {
        "facts": facts,
        "host": "n1",
        "version": VERSION,
        "branch": "580",
        "install_mode": "full",
        "kernel_modules": "open",
        "nvswitch": False,
        "peermem": False,
        "rdma_stack": "rdma-core",
        "package_mirror": "",
        "source": "nvidia",
        "apt_naming": "",
        "debian_userspace_packages": ["nvidia-smi", "libnvidia-ml1"],
        "debian_components": ["main", "contrib", "non-free", "non-free-firmware"],
        "hold_kernel": True,
        "reboot": True,
        "controller_host": "ctl",
        "controller_known": True,
        "check_mode": False,
        "slot_action": "",
        **change,
    }


def _names(**change: Any) -> dict[str, Any]:
    names: dict[str, Any] = FILTERS["gpu_nvidia_driver_names"](_inputs(**change))
    return names


def _node(**change: Any) -> dict[str, Any]:
    """A Debian 12 node converged to the pin in full mode, with `change` applied (files, installed, held)."""
    files = {
        SOURCES: file_entry(BODIES["sources"]),
        PREFERENCES: file_entry(BODIES["preferences"]),
        UNATTENDED: file_entry(BODIES["unattended"]),
        KEY: file_entry("key"),
        BLACKLIST: file_entry(BODIES["blacklist"]),
        "/etc/modprobe.d": file_entry(kind="directory", mode="0755"),
        "/etc/modules-load.d": file_entry(kind="directory", mode="0755"),
        **change.get("files", {}),
    }
    installed = change.get(
        "installed", {name: f"{VERSION}-1" for name in DEBIAN_FULL} | {f"linux-image-{KERNEL}": "1"}
    )
    return node_state(
        files={path: entry for path, entry in files.items() if entry},
        missing=[path for path, entry in files.items() if not entry] + [PEERMEM_CONF],
        installed=installed,
        held=change.get("held", list(installed)),
    )


def _plan(state: dict[str, Any], after: dict[str, Any] | None = None, **change: Any) -> dict[str, Any]:
    plan: dict[str, Any] = FILTERS["gpu_nvidia_driver_plan"](_inputs(**change), state, BODIES, after)
    return plan


def test_debian_full_mode_names_debian_s_packages_and_nvidia_s_debian12_repository() -> None:
    names = _names()
    assert names["apt_packages"] == DEBIAN_FULL
    assert names["repo_url"] == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    assert names["repo_key_file"] == "3bf863cc.pub"
    assert names["read"]["read"] == ["/etc/apt/sources.list", "/etc/apt/sources.list.d/*.sources"]


def test_proprietary_modules_and_nvswitch_change_the_debian_names() -> None:
    names = _names(kernel_modules="proprietary", nvswitch=True)
    assert names["apt_packages"][1] == "nvidia-kernel-dkms"
    assert names["apt_packages"][-1] == "nvidia-fabricmanager-580"


@pytest.mark.parametrize(
    ("mode", "modules", "packages"),
    [
        ("full", "open", ["nvidia-open-580", "nvidia-fabricmanager-580"]),
        ("full", "proprietary", ["cuda-drivers-580", "nvidia-fabricmanager-580"]),
        ("userspace", "open", ["nvidia-utils-580", "libnvidia-compute-580"]),
    ],
)
def test_ubuntu_names_carry_the_branch(mode: str, modules: str, packages: list[str]) -> None:
    names = _names(facts=UBUNTU, install_mode=mode, kernel_modules=modules, nvswitch=True)
    assert names["apt_packages"] == packages
    assert names["repo_url"].endswith("/ubuntu2404/x86_64/")
    assert names["branch_regex"].startswith(
        "^((nvidia|libnvidia|cuda-drivers|xserver-xorg-video-nvidia)(-[a-z0-9-]+)?-580"
    )


def test_rocky_names_the_rhel9_repository_its_key_and_dnf_packages() -> None:
    names = _names(facts=ROCKY, nvswitch=True, kernel_modules="proprietary")
    assert names["repo_url"].endswith("/rhel9/x86_64/") and names["repo_key_file"] == "D42D0685.pub"
    assert names["redhat_packages"] == [
        "nvidia-driver",
        "nvidia-driver-cuda",
        "kmod-nvidia-latest-dkms",
        "nvidia-persistenced",
        "nvidia-fabric-manager",
    ]
    assert names["pinned_packages"] == names["redhat_packages"] and names["read"]["read"] == []


def test_a_mirror_and_aarch64_change_the_repository_url() -> None:
    names = _names(package_mirror="http://mirror.example/cuda//", facts={"architecture": "aarch64"})
    assert names["repo_url"] == "http://mirror.example/cuda/debian12/sbsa/"


def test_debian_userspace_without_a_mirror_defaults_to_debian_s_own_tools() -> None:
    assert _names(install_mode="userspace")["default_source"] == "debian"
    assert _names(install_mode="userspace", package_mirror="http://m/")["default_source"] == "nvidia"
    assert _names(install_mode="userspace")["apt_packages"] == ["nvidia-smi", "libnvidia-ml1"]


def test_userspace_mode_reads_no_services_and_the_kernel_regex_names_the_running_kernel() -> None:
    assert _names(install_mode="userspace")["read"]["services"] == []
    assert _names()["kernel_regex"].startswith(
        r"^(linux-(image|headers|modules|modules-extra)-6\.1\.0\-37\-cloud\-amd64|"
    )


def test_unattended_upgrades_conf_is_written_only_where_the_tool_is_installed() -> None:
    assert not _plan(_node(files={UNATTENDED: None}))["apt_unattended"]


def test_a_converged_node_has_nothing_to_do() -> None:
    plan = _plan(_node())
    assert (plan["pending"], plan["todo"], plan["failed"]) == ([], False, [])
    assert plan["apt_hold"] == [*sorted(DEBIAN_FULL), f"linux-image-{KERNEL}"] and plan["apt_unheld"] == []


def test_another_release_takes_a_reboot_slot_and_installs() -> None:
    installed = {name: "570.1-1" for name in DEBIAN_FULL}
    assert _plan(_node(installed=installed))["pending"] == ["slot", "install"]
    assert _plan(_node(installed=installed), check_mode=True)["pending"] == ["install"]
    assert _plan(_node(installed=installed), reboot=False)["pending"] == ["install"]


def test_a_deferred_node_is_left_as_it_is() -> None:
    installed = {name: "570.1-1" for name in DEBIAN_FULL}
    assert _plan(_node(installed=installed), slot_action="defer")["pending"] == ["slot"]


@pytest.mark.parametrize(
    ("files", "step"),
    [
        ({KEY: None}, "apt_key"),
        ({SOURCES: file_entry("old")}, "apt_repository"),
        ({PREFERENCES: file_entry("old")}, "apt_packages"),
        ({UNATTENDED: None}, "apt_unattended"),
    ],
)
def test_each_apt_file_that_differs_is_an_install_step(files: dict[str, Any], step: str) -> None:
    installed = {name: f"{VERSION}-1" for name in DEBIAN_FULL} | {"unattended-upgrades": "2.9"}
    plan = _plan(_node(files=files, installed=installed))
    assert plan["pending"] == ["install"] and plan[step]


def test_an_unheld_branch_package_or_kernel_is_held() -> None:
    plan = _plan(_node(held=["nvidia-driver"]))
    assert plan["pending"] == ["install"] and "nvidia-smi" in plan["apt_unheld"]
    assert f"linux-image-{KERNEL}" in plan["apt_unheld"]
    assert f"linux-image-{KERNEL}" not in _plan(_node(), hold_kernel=False)["apt_hold"]


def test_the_hold_reads_this_run_s_installed_packages_after_an_install() -> None:
    plan = _plan(_node(), {"installed": ["nvidia-driver 580.126.09-1", "libfoo 1"]})
    assert plan["apt_hold"] == ["nvidia-driver"]


def test_debian_sources_lacking_a_component_are_fixed() -> None:
    state = _node()
    state["texts"] = {
        "/etc/apt/sources.list.d/debian.sources": "Suites: bookworm bookworm-updates\nComponents: main\n",
        "/etc/apt/sources.list": "deb http://deb.debian.org/debian bookworm main contrib non-free"
        " non-free-firmware\n",
    }
    plan = _plan(state)
    assert (
        plan["deb822_to_fix"] == ["/etc/apt/sources.list.d/debian.sources"]
        and not plan["sources_list_to_fix"]
    )
    assert plan["pending"] == ["install"]
    state["texts"] = {"/etc/apt/sources.list": "deb http://deb.debian.org/debian bookworm-updates main\n"}
    assert _plan(state)["sources_list_to_fix"]


def test_debian_s_own_tools_are_installed_and_held_where_missing_or_unheld() -> None:
    state = _node(installed={"nvidia-smi": "535-1"}, held=[])
    plan = _plan(state, install_mode="userspace", source="debian")
    assert (plan["pending"], plan["debian_missing"], plan["debian_unheld"]) == (
        ["install"],
        ["libnvidia-ml1"],
        ["nvidia-smi", "libnvidia-ml1"],
    )


def test_rocky_installs_on_every_converge() -> None:
    assert _plan(_node(), facts=ROCKY, install_mode="userspace")["pending"] == ["install"]


@pytest.mark.parametrize(
    ("files", "probe_stack"),
    [({BLACKLIST: None}, "rdma-core"), ({"/etc/modprobe.d": None}, "rdma-core"), ({}, "doca-ofed")],
)
def test_kernel_modules_run_where_the_blacklist_a_directory_differs_or_peermem_is_probed(
    files: dict[str, Any], probe_stack: str
) -> None:
    peermem = probe_stack == "doca-ofed"
    plan = _plan(_node(files=files), rdma_stack=probe_stack, peermem=peermem)
    assert "kernel_modules" in plan["pending"]
    userspace = _plan(_node(files=files), install_mode="userspace", rdma_stack=probe_stack)
    assert "kernel_modules" not in userspace["pending"]


def test_peermem_step_runs_where_wanted_or_an_old_boot_file_remains() -> None:
    assert _plan(_node(), peermem=True, rdma_stack="rdma-core")["pending"] == ["peermem"]
    left = _node(files={PEERMEM_CONF: file_entry("nvidia-peermem\n")})
    assert _plan(left, install_mode="userspace")["pending"] == ["peermem"]


@pytest.mark.parametrize(
    ("change", "rc", "way"),
    [
        ({"peermem": False}, 0, "none"),
        ({"peermem": True, "rdma_stack": "doca-ofed"}, 0, "peermem"),
        ({"peermem": True, "rdma_stack": "doca-ofed"}, 1, "dmabuf"),
        ({"peermem": True, "kernel_modules": "proprietary"}, None, "unavailable"),
        ({"peermem": True, "facts": {"kernel": "5.10.0-9-amd64"}}, None, "unavailable"),
    ],
)
def test_gpudirect_rdma_way(change: dict[str, Any], rc: int | None, way: str) -> None:
    assert _plan(_node(), {"peermem_rc": rc}, **change)["gpudirect"] == way


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"facts": {"distribution_major_version": "11", "distribution_version": "11.9"}},
            "n1 runs Debian 11.9; gpu_nvidia_driver supports Debian 12, Ubuntu 22, Ubuntu 24, Rocky 9,"
            " RedHat 9.",
        ),
        (
            {"version": "570.1"},
            "gpu_nvidia_driver_version=570.1 with branch 580: versions.nvidia_driver must be a release of"
            " versions.nvidia_driver_branch, e.g. 580.172.08.",
        ),
        (
            {"source": "debian"},
            "n1: gpu_nvidia_driver_source=debian installs Debian's non-free driver, which is not the pinned"
            " 580.126.09; it is only allowed for userspace mode on Debian. Set onprem.package_mirror"
            " (or leave the source at nvidia) so NVIDIA's repository provides the pinned driver.",
        ),
        (
            {"branch": "470", "version": "470.256.02"},
            "gpu_nvidia_driver_kernel_modules=open needs branch 515 or later (branch 470); raise"
            " versions.nvidia_driver_branch or set gpu_nvidia_driver_kernel_modules=proprietary.",
        ),
        (
            {"controller_known": False},
            "gpu_nvidia_driver_controller_host=ctl is not an inventory host; a driver change reboots the node"
            " only after draining it there. Run with the cluster file as inventory.",
        ),
    ],
)
def test_each_failed_check_says_what_to_do_and_plans_nothing(change: dict[str, Any], message: str) -> None:
    plan = _plan(_node(installed={}), **change)
    assert (plan["failed"], plan["pending"], plan["todo"]) == ([message], [], True)


def test_the_checks_that_hold_in_their_exceptions() -> None:
    assert _names(source="debian", install_mode="userspace")["failed"] == []
    assert _names(controller_known=False, reboot=False)["failed"] == []
    assert _names(branch="470", version="470.256.02", kernel_modules="proprietary")["failed"] == []


@pytest.mark.parametrize(
    ("facts", "mode", "mirror", "expected"),
    [
        ({}, "full", "", ("debian12", "x86_64", "debian", "nvidia")),
        ({}, "userspace", "", ("debian12", "x86_64", "debian", "debian")),  # Debian's own tools
        ({}, "userspace", "http://mirror.internal/cuda", ("debian12", "x86_64", "debian", "nvidia")),
        (
            {**UBUNTU, "distribution_version": "22.04", "architecture": "aarch64"},
            "full",
            "",
            ("ubuntu2204", "sbsa", "ubuntu", "nvidia"),
        ),
        (ROCKY, "userspace", "", ("rhel9", "x86_64", "ubuntu", "nvidia")),
    ],
)
def test_the_repository_names_nvidia_s_layout_and_the_role_s_defaults(
    facts: dict[str, Any], mode: str, mirror: str, expected: tuple[str, ...]
) -> None:
    inputs = {"facts": {**DEBIAN, **facts}, "install_mode": mode, "package_mirror": mirror}
    repository = FILTERS["gpu_nvidia_driver_repository"](inputs)
    assert (
        repository["distro"],
        repository["arch"],
        repository["naming"],
        repository["default_source"],
    ) == expected
    base = mirror or "https://developer.download.nvidia.com/compute/cuda/repos"
    assert repository["url"] == f"{base}/{expected[0]}/{expected[1]}/"


def test_a_mirror_s_trailing_slashes_are_dropped() -> None:
    inputs = {"facts": DEBIAN, "install_mode": "full", "package_mirror": "http://m/cuda//"}
    assert FILTERS["gpu_nvidia_driver_repository"](inputs)["url"] == "http://m/cuda/debian12/x86_64/"


def test_an_install_asks_for_the_pin_and_moves_other_releases_of_the_branch_with_it() -> None:
    """Branch packages of another release (a hand install, a dependency) come along at the pin."""
    before = [
        "nvidia-driver 570.1-1",
        "nvidia-dkms-580-open 570.1-1",  # a dependency at another release: moved to the pin
        "libnvidia-ml1 580.126.09-1",  # already at the pin: asked for as a package of the pin only
        "firmware-nvidia-gsp 1.0",  # not a driver release number: left alone
        "libnccl2 2.27.7-1",  # not a package of the branch
        f"linux-image-{KERNEL} 6.1.140-1",
    ]
    plan = _plan(_node(), {"before": before})
    assert plan["apt_install"] == [f"{name}={VERSION}-*" for name in [*DEBIAN_FULL, "nvidia-dkms-580-open"]]
    # DKMS builds against the running kernel: its headers at the installed image's version.
    assert plan["kernel_headers"] == f"linux-headers-{KERNEL}=6.1.140-1"
    with_headers = _plan(_node(), {"before": [*before, f"linux-headers-{KERNEL} 6.1.140-1"]})
    assert with_headers["kernel_headers"] == ""
    assert _plan(_node(), {"before": before}, install_mode="userspace")["kernel_headers"] == ""


def test_packages_of_the_branch_left_off_the_pin_after_the_install_are_named() -> None:
    after = [f"nvidia-driver {VERSION}-1", "libcuda1 570.1-1", "nvidia-kernel-open-dkms 1:580.126.09-1"]
    # A release with an epoch (1:580.126.09-1) is the pin's: only a bare NNN.… release is judged.
    assert _plan(_node(), {"installed": after})["off_pin"] == ["libcuda1 570.1-1"]
    assert _plan(_node(), {"installed": [f"nvidia-driver {VERSION}-1"]})["off_pin"] == []


def test_the_installed_release_is_the_first_pinned_package_s_without_epoch_and_revision() -> None:
    assert _plan(_node(installed={"nvidia-driver": "1:570.172.08-1"}))["installed_release"] == "570.172.08"
    assert _plan(_node(installed={}))["installed_release"] == "none"
