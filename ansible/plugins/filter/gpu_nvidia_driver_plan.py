"""Filters: what gpu_nvidia_driver's pins name on a node's OS, and what a converge of the role would change.

`gpu_nvidia_driver_repository` names NVIDIA's repository for the node's OS (the role's defaults take the
source, naming and URL from it); `gpu_nvidia_driver_names` needs no node state (packages per naming shape, the
files the role writes, the node read, the input checks); `gpu_nvidia_driver_plan` adds the node state and says
which steps are pending. The role's vars/main.yml only gathers their inputs; its tasks' `when`s read the plan.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import (
    packages_missing,
    packages_off_version,
    packages_unheld,
    paths_differ,
    state_current,
)
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.role_plan import (
    as_bool,
    as_int,
    failed_checks,
    installed_names,
    matches,
    plan,
)

# Per OS family: NVIDIA's CUDA repository layout (https://developer.download.nvidia.com/compute/cuda/repos/:
# debian12, ubuntu2204, ubuntu2404, rhel9; Rocky and RHEL share rhel9), the key file published next to each
# repository (2022 rotation) and the default apt naming shape.
FAMILIES: dict[str, dict[str, str]] = {
    "debian": {"repo_prefix": "debian", "key_file": "3bf863cc.pub", "naming": "debian"},
    "ubuntu": {"repo_prefix": "ubuntu", "key_file": "3bf863cc.pub", "naming": "ubuntu"},
    "redhat": {"repo_prefix": "rhel", "key_file": "D42D0685.pub", "naming": ""},
}
SUPPORTED = ["Debian 12", "Ubuntu 22", "Ubuntu 24", "Rocky 9", "RedHat 9"]
DEFAULT_MIRROR = "https://developer.download.nvidia.com/compute/cuda/repos"

APT_KEY = "/etc/apt/keyrings/cuda.asc"
APT_SOURCES = "/etc/apt/sources.list.d/cuda.sources"
APT_PREFERENCES = "/etc/apt/preferences.d/gpucluster-nvidia-driver.pref"
UNATTENDED_CONF = "/etc/apt/apt.conf.d/51gpucluster-nvidia-unattended-upgrades"
BLACKLIST = "/etc/modprobe.d/blacklist-nouveau.conf"
PEERMEM_CONF = "/etc/modules-load.d/nvidia-peermem.conf"
PIN_FILE = "/etc/gpucluster/nvidia-driver.pin"
BOOT_CHECK_UNIT = "/etc/systemd/system/gpucluster-driver-check.service"
SLURMD_DROP_IN = "/etc/systemd/system/slurmd.service.d/gpucluster-driver-check.conf"
MODULE_DIRS = [
    {"path": "/etc/modprobe.d", "kind": "directory", "mode": "0755"},
    {"path": "/etc/modules-load.d", "kind": "directory", "mode": "0755"},
]
# What the node read asks about: every name a branch regex, the kernel regex or a package list can match,
# the RHEL names and the tools the role asks about.
PACKAGE_GLOBS = [
    *(
        "nvidia-*",
        "libnvidia*",
        "libcuda*",
        "libnvcuvid*",
        "libnvoptix*",
        "libgl1-nvidia-*",
        "libglx-nvidia*",
    ),
    *(
        "libegl-nvidia*",
        "libgles-nvidia*",
        "firmware-nvidia-*",
        "xserver-xorg-video-nvidia*",
        "cuda-drivers*",
    ),
    *("kmod-nvidia*", "linux-*", "unattended-upgrades", "dracut", "initramfs-tools"),
]
# Every package of the driver branch by name (POSIX ERE: apt preferences read it too), per naming shape.
DEBIAN_BRANCH_REGEX = (
    "^(nvidia-.*|libnvidia.*|libcuda1|libcudadebug1|libnvcuvid1|libnvoptix1|libgl1-nvidia-.*|libglx-nvidia.*"
    "|libegl-nvidia.*|libgles-nvidia.*|firmware-nvidia-.*|xserver-xorg-video-nvidia.*|cuda-drivers.*)$"
)
UBUNTU_BRANCH_REGEX = (
    "^((nvidia|libnvidia|cuda-drivers|xserver-xorg-video-nvidia)(-[a-z0-9-]+)?-{branch}"
    "(-open|-server|-open-server)?|nvidia-modprobe|nvidia-settings|nvidia-persistenced|nvidia-xconfig)$"
)
KERNEL_FLAVOURS = "(amd64|arm64|cloud-amd64|cloud-arm64|generic|generic-hwe-[0-9.]+|virtual|aws|nvidia)"
REDHAT_USERSPACE = ["nvidia-driver-cuda-libs", "nvidia-driver-NVML", "nvidia-driver-cuda"]


def _family(facts: dict[str, Any]) -> str:
    """debian, ubuntu or redhat: the repository layout and package names follow it."""
    if facts["distribution"] == "Debian":
        return "debian"
    return "redhat" if facts["os_family"] == "RedHat" else "ubuntu"


def gpu_nvidia_driver_repository(inputs: dict[str, Any]) -> dict[str, Any]:
    """NVIDIA's CUDA repository for the node's OS (family, distro, arch, url, key file), the defaults it sets.

    inputs: facts, install_mode, package_mirror. Separate from the names: the role's defaults for the source,
    the apt naming and the repository URL come from here, and the names take those (perhaps overridden) back.
    """
    facts = inputs["facts"]
    family = _family(facts)
    release = (
        str(facts["distribution_version"]).replace(".", "")
        if family == "ubuntu"
        else str(facts["distribution_major_version"])
    )
    distro = FAMILIES[family]["repo_prefix"] + release
    arch = "sbsa" if facts["architecture"] == "aarch64" else str(facts["architecture"])
    base = re.sub("/+$", "", str(inputs.get("package_mirror") or "") or DEFAULT_MIRROR)
    userspace_debian = facts["distribution"] == "Debian" and inputs["install_mode"] != "full"
    return {
        "family": family,
        "distro": distro,
        "arch": arch,
        "url": f"{base}/{distro}/{arch}/",
        "key_file": FAMILIES[family]["key_file"],
        # Debian 12 userspace without a mirror keeps Debian's own non-free tools (the role's README).
        "default_source": "debian" if userspace_debian and not inputs.get("package_mirror") else "nvidia",
        "naming": "debian" if facts["distribution"] == "Debian" else "ubuntu",
    }


def _apt_packages(inputs: dict[str, Any], naming: str) -> list[str]:
    """What the role asks apt for: Debian's names (branch in the version only) or Ubuntu's (branch suffix)."""
    branch = str(inputs["branch"])
    open_modules = inputs["kernel_modules"] == "open"
    fabric = [f"nvidia-fabricmanager-{branch}"] if as_bool(inputs["nvswitch"]) else []
    if naming == "debian":
        if inputs["install_mode"] != "full":
            return list(inputs["debian_userspace_packages"])
        kernel = "nvidia-kernel-open-dkms" if open_modules else "nvidia-kernel-dkms"
        return [
            "nvidia-driver",
            kernel,
            "nvidia-persistenced",
            "nvidia-smi",
            "libcuda1",
            "libnvidia-ml1",
            *fabric,
        ]
    if inputs["install_mode"] != "full":
        return [f"nvidia-utils-{branch}", f"libnvidia-compute-{branch}"]
    return [("nvidia-open-" if open_modules else "cuda-drivers-") + branch, *fabric]


def _redhat_packages(inputs: dict[str, Any]) -> list[str]:
    """The dnf packages of the driver (module stream <branch>-open), fabric manager on NVSwitch nodes."""
    kernel = "kmod-nvidia-open-dkms" if inputs["kernel_modules"] == "open" else "kmod-nvidia-latest-dkms"
    fabric = ["nvidia-fabric-manager"] if as_bool(inputs["nvswitch"]) else []
    return ["nvidia-driver", "nvidia-driver-cuda", kernel, "nvidia-persistenced", *fabric]


def _checks(inputs: dict[str, Any], family: str, full: bool) -> list[str]:
    """The role's input checks (validate.yml), each failing one with what to do."""
    facts, host = inputs["facts"], inputs["host"]
    version, branch = str(inputs["version"]), str(inputs["branch"])
    open_modules = inputs["kernel_modules"] == "open"
    failed: list[str] = failed_checks(
        [
            (
                f"{facts['distribution']} {facts['distribution_major_version']}" in SUPPORTED,
                f"{host} runs {facts['distribution']} {facts['distribution_version']}; gpu_nvidia_driver"
                f" supports {', '.join(SUPPORTED)}.",
            ),
            (
                matches(r"^[0-9]{3}[.][0-9]+([.][0-9]+)?$", version)
                and version.split(".", maxsplit=1)[0] == branch,
                f"gpu_nvidia_driver_version={version} with branch {branch}: versions.nvidia_driver must be a"
                f" release of versions.nvidia_driver_branch, e.g. {branch}.172.08.",
            ),
            (
                inputs["source"] == "nvidia" or (family == "debian" and not full),
                f"{host}: gpu_nvidia_driver_source=debian installs Debian's non-free driver, which is not the"
                f" pinned {version}; it is only allowed for userspace mode on Debian. Set"
                " onprem.package_mirror (or leave the source at nvidia) so NVIDIA's repository provides the"
                " pinned driver.",
            ),
            (
                not open_modules or as_int(branch) >= 515,
                f"gpu_nvidia_driver_kernel_modules=open needs branch 515 or later (branch {branch}); raise"
                " versions.nvidia_driver_branch or set gpu_nvidia_driver_kernel_modules=proprietary.",
            ),
            (
                not full or not as_bool(inputs["reboot"]) or as_bool(inputs["controller_known"]),
                f"gpu_nvidia_driver_controller_host={inputs['controller_host']} is not an inventory host; a"
                " driver change reboots the node only after draining it there. Run with the cluster file as"
                " inventory.",
            ),
        ]
    )
    return failed


def gpu_nvidia_driver_names(inputs: dict[str, Any]) -> dict[str, Any]:
    """Family, packages, branch and kernel regexes, repository, files, the node read; the failed checks."""
    facts = inputs["facts"]
    family = _family(facts)
    full = inputs["install_mode"] == "full"
    naming = str(inputs.get("apt_naming") or FAMILIES[family]["naming"])
    branch = str(inputs["branch"])
    repository = gpu_nvidia_driver_repository(inputs)
    apt_packages = _apt_packages(inputs, naming) if family != "redhat" else []
    redhat = _redhat_packages(inputs)
    kernel = re.escape(str(facts["kernel"]))
    return {
        "failed": _checks(inputs, family, full),
        "family": family,
        "full": full,
        "open": inputs["kernel_modules"] == "open",
        "default_source": repository["default_source"],
        "repo_url": repository["url"],
        "repo_key_file": repository["key_file"],
        "apt_packages": apt_packages,
        "redhat_packages": redhat,
        "redhat_userspace_packages": REDHAT_USERSPACE,
        "pinned_packages": redhat if family == "redhat" else apt_packages,
        "branch_regex": DEBIAN_BRANCH_REGEX
        if naming == "debian"
        else UBUNTU_BRANCH_REGEX.format(branch=branch),
        "kernel_regex": (
            f"^(linux-(image|headers|modules|modules-extra)-{kernel}|linux-(image|headers)-{KERNEL_FLAVOURS}"
            f"|linux-{KERNEL_FLAVOURS})$"
        ),
        "apt_key": APT_KEY,
        "apt_sources": APT_SOURCES,
        "apt_preferences": APT_PREFERENCES,
        "unattended_conf": UNATTENDED_CONF,
        "pin_file": PIN_FILE,
        "module_dirs": MODULE_DIRS,
        "read": {
            "packages": True,
            "package_names": PACKAGE_GLOBS + list(inputs["debian_userspace_packages"]),
            "paths": [
                *(
                    "/etc/modprobe.d",
                    "/etc/modules-load.d",
                    PEERMEM_CONF,
                    BLACKLIST,
                    "/run/gpucluster-reboot-pending",
                ),
                *("/opt/gpucluster/bin", "/opt/gpucluster/bin/gpucluster-driver-check", "/etc/gpucluster"),
                *("/etc/systemd/system/slurmd.service.d", PIN_FILE, BOOT_CHECK_UNIT, SLURMD_DROP_IN),
                *(APT_KEY, APT_SOURCES, APT_PREFERENCES, UNATTENDED_CONF),
            ],
            "services": ["nvidia-persistenced", "nvidia-fabricmanager", "gpucluster-driver-check"]
            if full
            else [],
            "read": ["/etc/apt/sources.list", "/etc/apt/sources.list.d/*.sources"]
            if family == "debian"
            else [],
        },
    }


def _debian_sources(inputs: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Debian sources (deb822 files of this release, sources.list) that lack a wanted component."""
    release = str(inputs["facts"]["distribution_release"])
    missing = r"(?!\s+" + r"\s+".join(str(c) for c in inputs["debian_components"][1:]) + r"\s*$)[^\n]*$"
    deb822 = r"^Components:\s+main" + missing
    sources_list = r"^(deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?\S+\s+" + release + r"(?:-\S+)?)\s+main" + missing
    texts = state.get("texts") or {}
    deb822_to_fix = [
        path
        for path, text in texts.items()
        if re.match(r".*[.]sources$", path)
        and re.search(r"(?m)^Suites:.*\b" + release + r"\b", text)
        and re.search("(?m)" + deb822, text)
    ]
    sources_list_to_fix = (
        re.search(sources_list, texts.get("/etc/apt/sources.list", ""), re.MULTILINE) is not None
    )
    return {
        "deb822_regexp": deb822,
        "sources_list_regexp": sources_list,
        "deb822_to_fix": deb822_to_fix,
        "sources_list_to_fix": sources_list_to_fix,
    }


def gpu_nvidia_driver_gpudirect(inputs: dict[str, Any], after: dict[str, Any] | None = None) -> str:
    """How GPUDirect RDMA reaches GPU memory (the plan's `gpudirect`), from the inputs and modinfo's answer.

    record.yml publishes it on every run; this is the plan's answer without the rest of the plan (no node
    state, no file bodies), so a converged node does not pay for a whole plan to record it.
    """
    # Only the inputs _gpudirect reads are rendered (a lazy dict): names' `full` is this same test.
    return _gpudirect(inputs, inputs["install_mode"] == "full", (after or {}).get("peermem_rc"))


def _gpudirect(inputs: dict[str, Any], full: bool, peermem_rc: Any) -> str:
    """How GPUDirect RDMA reaches GPU memory: peermem, dmabuf, unavailable or none."""
    if not (full and as_bool(inputs["peermem"])):
        return "none"
    if inputs["rdma_stack"] == "doca-ofed" and as_int(1 if peermem_rc is None else peermem_rc) == 0:
        return "peermem"
    found = re.search("^[0-9]+[.][0-9]+", str(inputs["facts"]["kernel"]))
    release = tuple(int(part) for part in (found.group(0) if found else "0.0").split("."))
    dmabuf = inputs["kernel_modules"] == "open" and as_int(inputs["branch"]) >= 515 and release >= (5, 12)
    return "dmabuf" if dmabuf else "unavailable"


def _apt_steps(
    inputs: dict[str, Any],
    names: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    installed: list[str],
) -> dict[str, Any]:
    """Each step of the apt path from NVIDIA's repository: key, repository, packages, hold, unattended."""
    full = names["full"]
    hold = [name for name in installed if re.match(names["branch_regex"], name)]
    if full and as_bool(inputs["hold_kernel"]):
        hold += [name for name in installed if re.match(names["kernel_regex"], name)]
    return {
        "key": not (state.get("files", {}).get(APT_KEY, {}).get("exists") or False),
        "repository": not state_current(state, APT_SOURCES, bodies["sources"]),
        "packages": (
            not state_current(state, APT_PREFERENCES, bodies["preferences"])
            or len(packages_missing(state, names["apt_packages"])) > 0
            or len(packages_off_version(state, names["pinned_packages"], str(inputs["version"]))) > 0
        ),
        "hold": hold,
        "unheld": packages_unheld(state, hold),
        "unattended": "unattended-upgrades" in installed
        and not state_current(state, UNATTENDED_CONF, bodies["unattended"]),
    }


def _release(state: dict[str, Any], pinned: list[str]) -> str:
    """The driver release installed now (of the first pinned package, without epoch and revision), or none."""
    found = str((state.get("versions") or {}).get(pinned[0], "none")) if pinned else "none"
    return re.sub("-[^-]*$", "", re.sub("^[0-9]+:", "", found))


def _versions(lines: Any) -> dict[str, str]:
    """dpkg-query's "<package> <version>" lines as a dict."""
    return dict(str(line).split(" ", 1) for line in lines or [] if " " in str(line))


def _off_pin(versions: dict[str, str], branch_regex: str, version: str) -> dict[str, str]:
    """Installed packages of the branch (a driver release: NNN.…) at another release than the pin."""
    return {
        name: found
        for name, found in versions.items()
        if re.match(branch_regex, name)
        and re.match(r"^[0-9]{3}[.]", found)
        and not re.match(re.escape(version) + "-", found)
    }


def _apt_install(inputs: dict[str, Any], names: dict[str, Any], before: dict[str, str]) -> dict[str, Any]:
    """What install_apt_packages.yml asks apt for, from dpkg-query before the install.

    The packages of the pin plus installed branch packages of another release, all at =<version>-*; the
    running kernel's headers (at the installed image's version) where DKMS needs them and they are missing.
    """
    version, kernel = str(inputs["version"]), str(inputs["facts"]["kernel"])
    off = _off_pin(before, names["branch_regex"], version)
    wanted = list(dict.fromkeys([*names["apt_packages"], *off]))
    headers = f"linux-headers-{kernel}"
    image = before.get(f"linux-image-{kernel}", "")
    return {
        "apt_install": [f"{name}={version}-*" for name in wanted],
        "kernel_headers": (headers + (f"={image}" if image else ""))
        if names["full"] and headers not in before
        else "",
    }


def gpu_nvidia_driver_plan(
    inputs: dict[str, Any],
    state: dict[str, Any],
    bodies: dict[str, str],
    after: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Steps: reboot slot, install (its path's steps), kernel modules, nvidia-peermem; the GPUDirect RDMA way.

    bodies: the files' text as the role writes it (sources, preferences, unattended, blacklist). after: this
    run's answers: `before` and `installed` (dpkg-query lines before and after the install), `peermem_rc`
    (modinfo's exit status); None where the step did not run.
    """
    names = gpu_nvidia_driver_names(inputs)
    after = after or {}
    family, full, source = names["family"], names["full"], inputs["source"]
    installed = installed_names(state, after)
    sources = _debian_sources(inputs, state)
    sources_pending = family == "debian" and bool(sources["deb822_to_fix"] or sources["sources_list_to_fix"])
    apt = _apt_steps(inputs, names, state, bodies, installed)
    debian_missing = packages_missing(state, list(inputs["debian_userspace_packages"]))
    debian_unheld = packages_unheld(state, list(inputs["debian_userspace_packages"]))
    version_pending = len(packages_off_version(state, names["pinned_packages"], str(inputs["version"]))) > 0
    install = (
        family == "redhat"  # the dnf path checks itself: no state check
        or sources_pending
        or (source != "nvidia" and bool(debian_missing or debian_unheld))
        or (
            source == "nvidia"
            and (
                apt["key"] or apt["repository"] or apt["packages"] or bool(apt["unheld"]) or apt["unattended"]
            )
        )
    )
    module_dirs = paths_differ(state, MODULE_DIRS)
    blacklist = not state_current(state, BLACKLIST, bodies["blacklist"])
    peermem = as_bool(inputs["peermem"])
    peermem_probe = full and peermem and inputs["rdma_stack"] == "doca-ofed"
    peermem_conf = bool(state.get("files", {}).get(PEERMEM_CONF, {}).get("exists"))
    steps = {
        "slot": full and as_bool(inputs["reboot"]) and version_pending and not as_bool(inputs["check_mode"]),
        "install": inputs["slot_action"] != "defer" and install,
        "kernel_modules": full and bool(module_dirs or blacklist or peermem_probe),
        "peermem": (full and peermem) or peermem_conf,
    }
    return {
        **plan(names["failed"], steps),
        **sources,
        "sources_pending": sources_pending,
        **{f"apt_{key}": value for key, value in apt.items()},
        "debian_missing": debian_missing,
        "debian_unheld": debian_unheld,
        "version_pending": version_pending,
        "module_dirs": module_dirs,
        "blacklist": blacklist,
        "peermem_probe": peermem_probe,
        "gpudirect": _gpudirect(inputs, full, after.get("peermem_rc")),
        **_apt_install(inputs, names, _versions(after.get("before"))),
        "off_pin": [
            f"{name} {found}"
            for name, found in _off_pin(
                _versions(after.get("installed")), names["branch_regex"], str(inputs["version"])
            ).items()
        ],
        "installed_release": _release(state, names["pinned_packages"]),
    }


class FilterModule:
    """gpucluster.cluster.gpu_nvidia_driver_repository, gpu_nvidia_driver_names and gpu_nvidia_driver_plan."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "gpu_nvidia_driver_repository": gpu_nvidia_driver_repository,
            "gpu_nvidia_driver_names": gpu_nvidia_driver_names,
            "gpu_nvidia_driver_plan": gpu_nvidia_driver_plan,
            "gpu_nvidia_driver_gpudirect": gpu_nvidia_driver_gpudirect,
        }
