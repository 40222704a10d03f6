"""Parse `nvidia-smi -q -x` (XML) and `nvidia-smi nvlink -s` (text).

The XML schema is nvidia-smi's nvsmi_device_v*.dtd. ECC counters come in two layouts: drivers
≥ 535 list `sram_*`/`dram_*` counters, older ones `single_bit`/`double_bit` with a `total`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from gpucluster.accept.errors import ParseError


@dataclass(frozen=True)
class EccCounts:
    """Corrected and uncorrectable ECC error totals of one GPU, volatile or aggregate."""

    corrected: int
    uncorrectable: int


@dataclass(frozen=True)
class Gpu:
    """One GPU as `nvidia-smi -q -x` describes it."""

    bus_id: str
    name: str
    memory_mib: int
    persistence_mode: bool
    ecc_volatile: EccCounts
    ecc_aggregate: EccCounts
    remap_pending: bool  # a row remap waits for a GPU reset
    remap_failed: bool  # no spare row was left: the GPU needs replacing
    sram_threshold_exceeded: bool  # too many uncorrectable SRAM errors over its life: replace
    pcie_gen_current: int | None
    pcie_gen_max: int | None
    pcie_width_current: int | None
    pcie_width_max: int | None


@dataclass(frozen=True)
class NvidiaSmi:
    """The node's driver version and its GPUs."""

    driver_version: str
    gpus: tuple[Gpu, ...]


def _text(node: ET.Element, path: str) -> str:
    found = node.find(path)
    return (found.text or "").strip() if found is not None else ""


def _int_or_none(text: str) -> int | None:
    match = re.match(r"^(\d+)", text)
    return int(match.group(1)) if match else None


def _count(text: str) -> int:
    """An ECC counter; 'N/A' (not supported) counts as zero."""
    return int(text) if text.isdigit() else 0


def _ecc(node: ET.Element | None) -> EccCounts:
    if node is None:
        return EccCounts(0, 0)
    if node.find("single_bit") is not None or node.find("double_bit") is not None:
        return EccCounts(_count(_text(node, "single_bit/total")), _count(_text(node, "double_bit/total")))
    corrected = uncorrectable = 0
    for child in node:
        if "uncorrectable" in child.tag:
            uncorrectable += _count((child.text or "").strip())
        elif "correctable" in child.tag:
            corrected += _count((child.text or "").strip())
    return EccCounts(corrected, uncorrectable)


def _gpu(node: ET.Element) -> Gpu:
    memory = _int_or_none(_text(node, "fb_memory_usage/total"))
    if memory is None:
        raise ParseError(f"GPU {node.get('id', '?')}: no fb_memory_usage/total in MiB")
    link = "pci/pci_gpu_link_info"
    return Gpu(
        bus_id=node.get("id", ""),
        name=_text(node, "product_name"),
        memory_mib=memory,
        persistence_mode=_text(node, "persistence_mode") == "Enabled",
        ecc_volatile=_ecc(node.find("ecc_errors/volatile")),
        ecc_aggregate=_ecc(node.find("ecc_errors/aggregate")),
        remap_pending=_text(node, "remapped_rows/remapped_row_pending") == "Yes",
        remap_failed=_text(node, "remapped_rows/remapped_row_failure") == "Yes",
        sram_threshold_exceeded=_text(node, "ecc_errors/aggregate/sram_threshold_exceeded") == "Yes",
        pcie_gen_current=_int_or_none(_text(node, f"{link}/pcie_gen/current_link_gen")),
        pcie_gen_max=_int_or_none(_text(node, f"{link}/pcie_gen/max_link_gen")),
        pcie_width_current=_int_or_none(_text(node, f"{link}/link_widths/current_link_width")),
        pcie_width_max=_int_or_none(_text(node, f"{link}/link_widths/max_link_width")),
    )


def parse_nvidia_smi_xml(text: str) -> NvidiaSmi:
    """Parse `nvidia-smi -q -x`; raise ParseError unless it is an nvidia_smi_log document."""
    try:
        # nvidia-smi's own output on the node; the DOCTYPE names a local DTD that is not fetched.
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError(f"not XML from `nvidia-smi -q -x` ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"expected an <nvidia_smi_log> document, found <{root.tag}>")
    return NvidiaSmi(_text(root, "driver_version"), tuple(_gpu(g) for g in root.findall("gpu")))


_GPU_LINE = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?$")
_LINK_LINE = re.compile(r"^Link (\d+): (.+)$")


@dataclass(frozen=True)
class NvlinkGpu:
    """NVLink links of one GPU: index → active?"""

    index: int
    name: str
    links_active: dict[int, bool]


def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """Parse `nvidia-smi nvlink -s`; a link is active when it reports a speed, not `<inactive>`."""
    gpus: list[NvlinkGpu] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if gpu := _GPU_LINE.match(line):
            gpus.append(NvlinkGpu(int(gpu.group(1)), gpu.group(2), {}))
        elif (link := _LINK_LINE.match(line)) and gpus:
            gpus[-1].links_active[int(link.group(1))] = "GB/s" in link.group(2)
        else:
            raise ParseError(f"unexpected line in `nvidia-smi nvlink -s` output: {line[:80]!r}")
    if not gpus:
        raise ParseError("no `GPU n:` lines in `nvidia-smi nvlink -s` output")
    return tuple(gpus)
