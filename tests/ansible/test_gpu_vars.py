"""Role and acceptance variables the inventory gives each node from its profile and the pinned versions."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from gpucluster.ansible_vars import inventory
from gpucluster.clusterfile import Cluster, load_text
from tests.ansible.role_vars import DEBIAN, role_expression, set_fact_expression
from tests.conftest import ROOT

EXAMPLE = ROOT / "clusters" / "example.yaml"


def _cluster(**onprem: Any) -> Cluster:
    """The example cluster with onprem fields replaced (profiles merged per key)."""
    data = yaml.safe_load(EXAMPLE.read_text())
    profiles = onprem.pop("profiles", {})
    for name, fields in profiles.items():
        data["onprem"]["profiles"][name].update(fields)
    data["onprem"].update(onprem)
    return load_text(yaml.safe_dump(data), source="example-variant.yaml").cluster


def _host(cluster: Cluster, name: str) -> dict[str, Any]:
    return inventory(cluster, "cluster.yaml").hosts[name]


def test_a_node_gets_the_pinned_versions(example: Cluster) -> None:
    host = _host(example, "gpu-a01")
    assert host["gpu_nvidia_driver_branch"] == example.versions.nvidia_driver_branch == "580"
    assert host["gpu_nvidia_driver_version"] == "580.126.09"
    assert host["gpu_cuda_toolkit_version"] == host["gpu_nccl_cuda_version"] == "13.0"
    assert host["gpu_nccl_version"] == "2.28.9-1"
    assert host["gpu_nccl_tests_version"] == example.versions.nccl_tests
    assert host["gpu_dcgm_version"] == example.versions.dcgm


def test_an_nvswitch_profile_with_infiniband_gets_fabric_manager_and_peermem(example: Cluster) -> None:
    host = _host(example, "gpu-b03")
    assert host["gpu_nvidia_driver_nvswitch"] is True
    assert host["gpu_nvidia_driver_peermem"] is True
    assert host["net_infiniband_hca_count"] == 8
    assert host["net_infiniband_stack"] == "rdma-core"
    assert {host[f"{role}_install_mode"] for role in _ROLES} == {"full"}
    assert host["gpu_nvidia_driver_package_mirror"] == host["net_infiniband_package_mirror"] == ""


_ROLES = ("gpu_nvidia_driver", "gpu_cuda_toolkit", "gpu_dcgm", "gpu_nccl", "net_infiniband")


def test_no_peermem_without_hcas_or_without_gpudirect() -> None:
    no_hcas = _host(_cluster(profiles={"dgx-h100": {"hcas": {"count": 0}}}), "gpu-a01")
    no_gdr = _host(
        _cluster(profiles={"dgx-h100": {"hcas": {"count": 8, "gpudirect_rdma": False}}}), "gpu-a01"
    )
    assert no_hcas["gpu_nvidia_driver_peermem"] is False and no_hcas["net_infiniband_hca_count"] == 0
    assert no_gdr["gpu_nvidia_driver_peermem"] is False and no_gdr["net_infiniband_hca_count"] == 8


def test_userspace_profile_reaches_every_role() -> None:
    host = _host(_cluster(profiles={"dgx-h100": {"install_mode": "userspace", "nvswitch": False}}), "gpu-b01")
    assert {host[f"{role}_install_mode"] for role in _ROLES} == {"userspace"}
    assert host["gpu_nvidia_driver_nvswitch"] is False


def test_ipoib_address_comes_with_the_prefix_of_the_ipoib_network() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    onprem = data["onprem"]
    onprem["ipoib_cidr"] = "172.16.0.0/16"
    onprem["profiles"]["dgx-h100"]["hcas"]["ipoib"] = True
    onprem["racks"][0]["node_range"]["first_ipoib_address"] = "172.16.1.11"
    for index, node in enumerate(onprem["racks"][1]["nodes"], start=11):
        node["ipoib_address"] = f"172.16.2.{index}"
    cluster = load_text(yaml.safe_dump(data), source="ipoib.yaml").cluster
    assert _host(cluster, "gpu-a03")["net_infiniband_ipoib_address"] == "172.16.1.13/16"
    assert _host(cluster, "gpu-b02")["net_infiniband_ipoib_address"] == "172.16.2.12/16"


def test_no_ipoib_address_when_the_profile_does_not_enable_ipoib(example: Cluster) -> None:
    assert _host(example, "gpu-a01")["net_infiniband_ipoib_address"] == ""


def test_subnet_manager_on_a_rack_node() -> None:
    result = inventory(_cluster(subnet_manager="gpu-b04"), "cluster.yaml")
    assert result.hosts["gpu-b04"]["net_infiniband_subnet_manager"] is True
    assert result.hosts["gpu-b03"]["net_infiniband_subnet_manager"] is False
    assert result.groups["infiniband_subnet_manager"] == ["gpu-b04"]


def test_subnet_manager_on_a_service_host_gets_opensm_only() -> None:
    result = inventory(_cluster(subnet_manager="head01"), "cluster.yaml")
    head = result.hosts["head01"]
    assert head["net_infiniband_subnet_manager"] is True
    assert not any(key.startswith("gpu_") for key in head)
    assert result.groups["infiniband_subnet_manager"] == ["head01"]


def test_no_subnet_manager_group_members_when_the_switches_run_it(example: Cluster) -> None:
    result = inventory(example, "cluster.yaml")
    assert result.groups["infiniband_subnet_manager"] == []
    assert "net_infiniband_subnet_manager" not in result.hosts["head01"]


def test_package_mirror_reaches_the_driver_and_fabric_roles() -> None:
    host = _host(_cluster(package_mirror="http://mirror.example.internal/nvidia"), "gpu-a02")
    assert host["gpu_nvidia_driver_package_mirror"] == "http://mirror.example.internal/nvidia"
    assert host["net_infiniband_package_mirror"] == "http://mirror.example.internal/nvidia"


def test_every_gpu_variable_is_documented_in_its_role() -> None:
    host = _host(load_text(EXAMPLE.read_text(), source=str(EXAMPLE)).cluster, "gpu-a01")
    for role in _ROLES:
        spec = yaml.safe_load((ROOT / "ansible" / "roles" / role / "meta" / "argument_specs.yml").read_text())
        options = spec["argument_specs"]["main"]["options"]
        given = {key for key in host if key.startswith(role + "_")}
        assert given and given <= set(options), f"{role}: undocumented {given - set(options)}"


def test_a_node_gets_the_acceptance_settings_of_its_profile() -> None:
    cluster = _cluster(profiles={"dgx-h100": {"acceptance": {"dcgm_level": 3, "nccl_test_size": "4G"}}})
    host = _host(cluster, "gpu-b02")
    assert host["gpucluster_accept_dcgm_level"] == 3
    assert host["gpucluster_accept_nccl_test_size"] == "4G"
    assert host["gpucluster_accept_gpu_count"] == len(host["slurm_node_gpu_devices"]) == 8


def test_acceptance_settings_default_to_the_profile_defaults(example: Cluster) -> None:
    host = _host(example, "gpu-a01")
    assert (host["gpucluster_accept_dcgm_level"], host["gpucluster_accept_nccl_test_size"]) == (2, "1G")
    assert host["slurm_node_gpu_devices"] == [f"/dev/nvidia{n}" for n in range(8)]


def test_the_rdma_stack_reaches_the_driver_role() -> None:
    host = _host(_cluster(profiles={"dgx-h100": {"hcas": {"count": 8, "stack": "doca-ofed"}}}), "gpu-a01")
    assert host["gpu_nvidia_driver_rdma_stack"] == "doca-ofed"


# The driver role's own expressions (defaults and vars, the plan filter they call), rendered by Ansible's
# templar with a node's facts: what the role's tasks read.
_NODE_FACTS = {**DEBIAN, "kernel": "6.1.0-37-amd64"}
_FULL = {"gpu_nvidia_driver_install_mode": "full", "gpu_nvidia_driver_peermem": True, "hostvars": {}}


def _driver(expression: str, **overrides: Any) -> Any:
    return role_expression("gpu_nvidia_driver", expression, facts=_NODE_FACTS, **{**_FULL, **overrides})


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "dmabuf"),  # rdma-core, open modules of 580, kernel 6.1
        (
            {"ansible_facts": {**_NODE_FACTS, "kernel": "5.4.0-150-generic"}},
            "unavailable",
        ),  # DMA-BUF needs kernel >= 5.12
        (
            {"gpu_nvidia_driver_kernel_modules": "proprietary"},
            "unavailable",
        ),  # DMA-BUF needs the open modules
        (
            {"gpu_nvidia_driver_rdma_stack": "doca-ofed", "__gpu_nvidia_driver_peermem_module": {"rc": 0}},
            "peermem",
        ),
        # DOCA-OFED, but no nvidia-peermem built for the running kernel: DMA-BUF where it works.
        (
            {"gpu_nvidia_driver_rdma_stack": "doca-ofed", "__gpu_nvidia_driver_peermem_module": {"rc": 1}},
            "dmabuf",
        ),
        ({"gpu_nvidia_driver_peermem": False}, "none"),
        ({"gpu_nvidia_driver_install_mode": "userspace"}, "none"),
    ],
)
def test_gpudirect_rdma_uses_peermem_only_where_it_loads_else_dmabuf(
    overrides: dict[str, Any], expected: str
) -> None:
    assert _driver("__gpu_nvidia_driver_plan.gpudirect", **overrides) == expected
    # record.yml publishes it with the cheaper filter (no node state, no bodies): the same answer.
    recorded = set_fact_expression("gpu_nvidia_driver", "record.yml", "gpu_nvidia_driver_gpudirect_rdma")
    assert _driver(recorded, **overrides) == expected


def test_both_naming_shapes_ask_for_the_open_driver_and_fabric_manager() -> None:
    debian = _driver("__gpu_nvidia_driver_names.apt_packages", gpu_nvidia_driver_nvswitch=True)
    ubuntu = _driver(
        "__gpu_nvidia_driver_names.apt_packages",
        gpu_nvidia_driver_nvswitch=True,
        gpu_nvidia_driver_apt_naming="ubuntu",
    )
    assert debian[:2] == ["nvidia-driver", "nvidia-kernel-open-dkms"] and "nvidia-fabricmanager-580" in debian
    assert ubuntu == ["nvidia-open-580", "nvidia-fabricmanager-580"]


def test_the_branch_pattern_holds_the_branch_and_nothing_of_the_rest_of_the_stack() -> None:
    debian = re.compile(_driver("__gpu_nvidia_driver_names.branch_regex"))
    ubuntu = re.compile(
        _driver("__gpu_nvidia_driver_names.branch_regex", gpu_nvidia_driver_apt_naming="ubuntu")
    )
    for name in (
        "nvidia-driver",
        "libcuda1",
        "nvidia-kernel-open-dkms",
        "firmware-nvidia-gsp",
        "cuda-drivers-580",
    ):
        assert debian.match(name), name
    for name in (
        "nvidia-open-580",
        "nvidia-driver-580-open",
        "libnvidia-compute-580",
        "nvidia-fabricmanager-580",
    ):
        assert ubuntu.match(name), name
    for name in ("cuda-toolkit-12-8", "libnccl2", "datacenter-gpu-manager", "linux-image-amd64"):
        assert not debian.match(name) and not ubuntu.match(name), name
    assert not ubuntu.match("nvidia-driver-575-open") and not ubuntu.match("nvidia-driver-570-open")


def test_debian_userspace_without_a_mirror_keeps_debian_tools_and_says_so() -> None:
    assert _driver("gpu_nvidia_driver_source", gpu_nvidia_driver_install_mode="userspace") == "debian"
    assert (
        _driver(
            "gpu_nvidia_driver_source",
            gpu_nvidia_driver_install_mode="userspace",
            gpu_nvidia_driver_package_mirror="http://mirror.internal/cuda",
        )
        == "nvidia"
    )
    assert _driver("gpu_nvidia_driver_source") == "nvidia"  # full mode: always the pin
    assert (
        _driver("gpu_nvidia_driver_repo_url")
        == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    )


def test_the_running_kernel_is_held_with_the_driver() -> None:
    kernel = re.compile(_driver("__gpu_nvidia_driver_names.kernel_regex"))
    for name in (
        "linux-image-6.1.0-37-amd64",
        "linux-headers-6.1.0-37-amd64",
        "linux-image-amd64",
        "linux-generic",
    ):
        assert kernel.match(name), name
    assert not kernel.match("linux-image-6.1.0-38-amd64") and not kernel.match("linux-libc-dev")


# The text converged nodes already hold (the role wrote it from vars/main.yml before the bodies moved to
# templates/): a changed byte would rewrite the file, and restart or reboot what reads it, on every node.
_DRIVER_FILES = {
    "sources": (
        "# Managed by Ansible (role gpu_nvidia_driver): NVIDIA's CUDA repository (or its mirror).\n"
        "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/\n"
        "Suites: /\nSigned-By: /etc/apt/keyrings/cuda.asc\n"
    ),
    "preferences": (
        "# Managed by Ansible (role gpu_nvidia_driver): driver 580.126.09 as pinned in the cluster file.\n"
        "Package: /^(nvidia-.*|libnvidia.*|libcuda1|libcudadebug1|libnvcuvid1|libnvoptix1|libgl1-nvidia-.*"
        "|libglx-nvidia.*|libegl-nvidia.*|libgles-nvidia.*|firmware-nvidia-.*|xserver-xorg-video-nvidia.*"
        "|cuda-drivers.*)$/\nPin: version 580.126.09-*\nPin-Priority: 1001\n"
    ),
    "unattended": (
        "// Managed by Ansible (role gpu_nvidia_driver): the NVIDIA stack and the kernel move only with the"
        " cluster file's pins.\nUnattended-Upgrade::Package-Blacklist {\n"
        + "".join(
            f'    "{prefix}";\n'
            for prefix in (
                *("nvidia-", "libnvidia-", "libcuda", "cuda-", "libnccl", "datacenter-gpu-manager"),
                *("linux-image-", "linux-headers-", "linux-modules-"),
            )
        )
        + "};\n"
    ),
    "blacklist": (
        "# Managed by Ansible (role gpu_nvidia_driver); do not edit.\n"
        "blacklist nouveau\noptions nouveau modeset=0\n"
    ),
    "peermem": (
        "# Managed by Ansible (role gpu_nvidia_driver): GPUDirect RDMA through nvidia-peermem (rdma-core).\n"
        "nvidia-peermem\n"
    ),
}
_DRIVER_UNITS = [
    (
        "/etc/systemd/system/gpucluster-driver-check.service",
        "# Managed by Ansible (role gpu_nvidia_driver); do not edit.\n[Unit]\n"
        "Description=gpucluster: the loaded NVIDIA driver is the pinned release before slurmd starts\n"
        "Wants=network-online.target\nAfter=network-online.target munge.service nvidia-persistenced.service\n"
        "Before=slurmd.service\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        "ExecStart=/opt/gpucluster/bin/gpucluster-driver-check\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "/etc/systemd/system/slurmd.service.d/gpucluster-driver-check.conf",
        "# Managed by Ansible (role gpu_nvidia_driver); do not edit."
        " slurmd starts only after the check passed.\n"
        "[Unit]\nRequires=gpucluster-driver-check.service\nAfter=gpucluster-driver-check.service\n",
    ),
]


def test_the_driver_role_s_files_keep_the_text_converged_nodes_hold() -> None:
    assert _driver("__gpu_nvidia_driver_bodies") == _DRIVER_FILES
    units = _driver("__gpu_nvidia_driver_boot_check_units")
    assert [(unit["path"], unit["text"]) for unit in units] == _DRIVER_UNITS
    assert _driver("__gpu_nvidia_driver_reboot_marker") == (
        "gpucluster: NVIDIA driver 580.126.09 (or the nouveau blacklist) changed;"
        " reboot (drained) to load it.\n"
    )


ALL_COMPONENTS = "main contrib non-free non-free-firmware"


def test_the_sources_the_driver_role_rewrites_are_this_releases_lacking_a_component() -> None:
    """The deb822 files and sources.list the role adds contrib and non-free to (its include's condition)."""
    texts = {
        "/etc/apt/sources.list.d/debian.sources": (
            "Types: deb\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
            f"Types: deb\nSuites: bookworm-security\nComponents: {ALL_COMPONENTS}\n"
        ),
        "/etc/apt/sources.list.d/done.sources": f"Suites: bookworm\nComponents: {ALL_COMPONENTS}\n",
        "/etc/apt/sources.list.d/trixie.sources": "Suites: trixie\nComponents: main\n",
        "/etc/apt/sources.list.d/other-word.sources": "Suites: bookwormish\nComponents: main\n",
        "/etc/apt/sources.list": "deb http://mirror.example/debian bookworm main\n",
    }
    state = {"texts": texts}
    to_fix = _driver("__gpu_nvidia_driver_plan.deb822_to_fix", gpu_nvidia_driver_node_state=state)
    assert to_fix == ["/etc/apt/sources.list.d/debian.sources"]
    assert _driver("__gpu_nvidia_driver_plan.sources_list_to_fix", gpu_nvidia_driver_node_state=state) is True
    done = {
        **texts,
        "/etc/apt/sources.list": f"deb http://mirror.example/debian bookworm {ALL_COMPONENTS}\n",
    }
    assert (
        _driver("__gpu_nvidia_driver_plan.sources_list_to_fix", gpu_nvidia_driver_node_state={"texts": done})
        is False
    )


def test_a_role_used_alone_defaults_to_the_model_s_pins() -> None:
    """A role run alone (its defaults/) installs what a cluster file that omits `versions` gets."""
    from gpucluster.clusterfile.model.software import Versions

    pins = Versions()
    expected = {
        "gpu_nvidia_driver": {
            "gpu_nvidia_driver_branch": pins.nvidia_driver_branch,
            "gpu_nvidia_driver_version": pins.nvidia_driver,
        },
        "gpu_cuda_toolkit": {"gpu_cuda_toolkit_version": pins.cuda},
        "gpu_nccl": {"gpu_nccl_version": pins.nccl, "gpu_nccl_cuda_version": pins.cuda},
        "gpu_dcgm": {"gpu_dcgm_version": pins.dcgm},
    }
    for role, variables in expected.items():
        defaults = yaml.safe_load((ROOT / "ansible" / "roles" / role / "defaults" / "main.yml").read_text())
        assert {name: defaults[name] for name in variables} == variables, role


@pytest.mark.parametrize(
    ("dcgm", "cuda", "engine"),
    [
        ("4.4.2", "13.0", ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13"]),
        ("4.4.2", "12.8.0", ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda12"]),
        ("3.3.9", "12.8", ["datacenter-gpu-manager"]),  # DCGM 3: one package
    ],
)
def test_dcgm_pins_each_engine_package_of_its_major_and_the_exporter(
    dcgm: str, cuda: str, engine: list[str]
) -> None:
    pins = {"gpu_dcgm_version": dcgm, "gpu_dcgm_cuda_version": cuda}
    exporter = "datacenter-gpu-manager-exporter"
    assert role_expression("gpu_dcgm", "__gpu_dcgm_names.apt_names", **pins) == [*engine, exporter]
    globs = role_expression("gpu_dcgm", "__gpu_dcgm_names.apt_globs", **pins)
    assert globs == [f"1:{dcgm}*"] * len(engine) + [f"{dcgm}-*"]
    text = role_expression("gpu_dcgm", "__gpu_dcgm_bodies.preferences", **pins)
    # apt_preferences(5): stanzas separated by one blank line, each Package / Pin / Pin-Priority.
    stanzas = [dict(line.split(": ", 1) for line in block.splitlines()) for block in text.split("\n\n")]
    stanzas[0] = {key: value for key, value in stanzas[0].items() if not key.startswith("#")}
    assert [stanza["Package"] for stanza in stanzas] == [*engine, exporter]
    assert {stanza["Pin-Priority"] for stanza in stanzas} == {"1001"}
    userspace = role_expression(
        "gpu_dcgm", "__gpu_dcgm_names.apt_names", gpu_dcgm_install_mode="userspace", **pins
    )
    assert userspace == engine
