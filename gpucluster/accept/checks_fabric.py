"""Checks of the InfiniBand HCAs and of PCIe links against the profile."""

from __future__ import annotations

from gpucluster.accept.checks_gpu import listed_gpus
from gpucluster.accept.declared import Declared
from gpucluster.accept.ibstat import ChannelAdapter, IbPort
from gpucluster.accept.observed import Observed
from gpucluster.accept.results import CheckResult, failed, skipped, verdict


def _ib_ports(ca: ChannelAdapter) -> list[IbPort]:
    """InfiniBand ports of a CA (an old ibstat without `Link layer` means InfiniBand)."""
    return [p for p in ca.ports if p.link_layer in ("", "InfiniBand")]


def _hcas(d: Declared, obs: Observed) -> list[ChannelAdapter]:
    """The profile's HCAs: CAs named with the profile's prefix that have an InfiniBand port."""
    cas = obs.ibstat.value or []
    return [ca for ca in cas if ca.name.startswith(d.hca_prefix) and _ib_ports(ca)]


def _fabric_name(d: Declared) -> str:
    return d.fabric.name if d.fabric else "InfiniBand"


def _no_hcas_problem(d: Declared, obs: Observed) -> str:
    return obs.ibstat.problem or f"ibstat lists no {d.hca_prefix}* InfiniBand CAs"


def hca_count(d: Declared, obs: Observed) -> CheckResult:
    """As many InfiniBand HCAs as the profile declares."""
    if d.hca_count == 0:
        return skipped("hca_count", "the profile declares no HCAs")
    hcas = _hcas(d, obs)
    expected = f"{d.hca_count} × {_fabric_name(d)} HCAs ({d.hca_prefix}*)"
    problem = "" if hcas else _no_hcas_problem(d, obs)
    return verdict("hca_count", len(hcas) == d.hca_count, expected, str(len(hcas)), problem)


def hca_state_active(d: Declared, obs: Observed) -> CheckResult:
    """Every HCA port is Active and LinkUp: the subnet manager has brought it into the fabric."""
    if d.hca_count == 0:
        return skipped("hca_state_active", "the profile declares no HCAs")
    hcas = _hcas(d, obs)
    expected = f"{d.hca_count} × {_fabric_name(d)} HCAs ACTIVE"
    down = [
        f"{ca.name} port {p.number} {p.state}/{p.physical_state}"
        for ca in hcas
        for p in _ib_ports(ca)
        if (p.state, p.physical_state) != ("Active", "LinkUp")
    ]
    active = len(hcas) - len({item.split()[0] for item in down})
    found = str(active) + (f" ({', '.join(down)})" if down else "")
    problem = "" if hcas else _no_hcas_problem(d, obs)
    return verdict("hca_state_active", active == d.hca_count, expected, found, problem)


def hca_rate(d: Declared, obs: Observed) -> CheckResult:
    """Every HCA port runs at the fabric's line rate."""
    if d.hca_count == 0 or d.fabric is None:
        return skipped("hca_rate", "the profile declares no HCAs")
    hcas = _hcas(d, obs)
    expected = f"{d.fabric.per_port_gbps} Gb/s on every HCA port"
    if not hcas:
        return failed("hca_rate", expected, "no HCAs", _no_hcas_problem(d, obs))
    slow = [
        f"{ca.name} port {p.number} {p.rate_gbps} Gb/s"
        for ca in hcas
        for p in _ib_ports(ca)
        if p.rate_gbps != d.fabric.per_port_gbps
    ]
    found = ", ".join(slow) if slow else f"{d.fabric.per_port_gbps} Gb/s on {len(hcas)} HCAs"
    return verdict("hca_rate", not slow, expected, found)


def nvidia_peermem(d: Declared, obs: Observed) -> CheckResult:
    """With GPUDirect RDMA, nvidia_peermem is loaded so HCAs can DMA to GPU memory."""
    if not d.gpudirect_rdma or d.hca_count == 0:
        return skipped("nvidia_peermem", "the profile uses no GPUDirect RDMA over HCAs")
    expected = "kernel module nvidia_peermem loaded"
    if obs.lsmod.value is None:
        return failed("nvidia_peermem", expected, "no module list", obs.lsmod.problem)
    loaded = "nvidia_peermem" in obs.lsmod.value
    return verdict("nvidia_peermem", loaded, expected, "loaded" if loaded else "not loaded")


def _gpu_links(d: Declared, obs: Observed) -> tuple[list[str], str]:
    """Degraded GPU links; link generation is not gated: GPUs drop it when idle to save power."""
    if d.gpu_count == 0:
        return [], ""
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return [], f"no GPUs ({problem})"
    return [
        f"GPU {g.bus_id.removeprefix('00000000:')} x{g.pcie_width_current} of x{g.pcie_width_max}"
        for g in gpus
        if g.pcie_width_current != g.pcie_width_max
    ], ""


def _link(speed_gts: float | None, width: int | None) -> str:
    speed = f"{speed_gts:g}" if speed_gts is not None else "?"
    return f"{speed}GT/s x{width if width is not None else '?'}"


def _hca_links(d: Declared, obs: Observed) -> tuple[list[str], str]:
    """Degraded HCA links, from lspci's LnkSta against LnkCap."""
    if d.hca_count == 0:
        return [], ""
    if obs.lspci.value is None:
        return [], f"no HCA link status ({obs.lspci.problem})"
    if not obs.lspci.value:
        return [], "no HCA on the PCIe bus (lspci -d 15b3: lists nothing)"
    linked = [dev for dev in obs.lspci.value if dev.sta_width is not None]
    if len(linked) < d.hca_count:
        return [], f"{len(linked)} HCA functions with link status (lspci needs root to show LnkSta)"
    return [
        f"HCA {dev.address} {_link(dev.sta_speed_gts, dev.sta_width)}"
        f" of {_link(dev.cap_speed_gts, dev.cap_width)}"
        for dev in linked
        if not dev.at_max
    ], ""


def pcie_links(d: Declared, obs: Observed) -> CheckResult:
    """GPU and HCA PCIe links trained at full width (and, for HCAs, full speed)."""
    expected = f"{d.gpu_count} GPUs and {d.hca_count} HCAs at full PCIe width/speed"
    gpu_bad, gpu_problem = _gpu_links(d, obs)
    hca_bad, hca_problem = _hca_links(d, obs)
    problems = [p for p in (gpu_problem, hca_problem) if p]
    if problems:
        return failed("pcie_links", expected, "; ".join(problems))
    found = ", ".join(gpu_bad + hca_bad) or "all links at full width/speed"
    return verdict("pcie_links", not gpu_bad and not hca_bad, expected, found)
