"""Each recorded command parsed once: a value, or the reason there is none in the tool's own words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from gpucluster.accept.dcgm import DcgmDiag, parse_dcgm_diag
from gpucluster.accept.errors import ParseError
from gpucluster.accept.fabric_finding import Finding
from gpucluster.accept.ibstat import ChannelAdapter, parse_ibstat
from gpucluster.accept.lsmod import parse_lsmod
from gpucluster.accept.lspci import PcieDevice, parse_lspci
from gpucluster.accept.nccl_tests import NcclResult, parse_nccl_tests
from gpucluster.accept.nvidia_smi import NvidiaSmi, NvlinkGpu, parse_nvidia_smi_xml, parse_nvlink_status
from gpucluster.accept.observations import CommandResult, Observations

T = TypeVar("T")


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A parsed command output, or None with `problem` saying why (e.g. `ibstat: not installed`)."""

    value: T | None
    problem: str = ""


def parse_command(
    obs: Observations, name: str, tool: str, parser: Callable[[str], T], *, results_on_failure: bool = False
) -> Parsed[T]:
    """Parse command `name`'s stdout; a missing tool, failed run or garbage becomes a problem.

    `results_on_failure`: the tool exits non-zero when a test fails yet still prints its results
    (`dcgmi diag`, nccl-tests), so its output is read whatever the exit status.
    """
    return parse_result(obs.get(name), tool, parser, results_on_failure=results_on_failure)


def parse_result(
    result: CommandResult | None, tool: str, parser: Callable[[str], T], *, results_on_failure: bool = False
) -> Parsed[T]:
    """Parse one command result as parse_command does (a fabric run has no node of its own)."""
    if result is None or not result.installed:
        return Parsed(None, f"{tool}: not installed")
    if result.rc != 0 and not results_on_failure:
        return Parsed(None, f"{tool}: {result.error_line()}")
    try:
        return Parsed(parser(result.stdout))
    except ParseError as exc:
        if result.rc != 0:
            return Parsed(None, f"{tool}: {result.error_line()}")
        return Parsed(None, f"{tool}: unreadable output ({exc})")


@dataclass(frozen=True)
class Observed:
    """Everything the checks need from one node, parsed."""

    smi: Parsed[NvidiaSmi]
    nvlink: Parsed[tuple[NvlinkGpu, ...]]
    fabricmanager: CommandResult | None
    ibstat: Parsed[list[ChannelAdapter]]
    lsmod: Parsed[frozenset[str]]
    lspci: Parsed[list[PcieDevice]]
    dcgm: Parsed[DcgmDiag]
    nccl_single: Parsed[NcclResult]
    fabric: Finding | None  # None when the node was not in the fabric test (gpucluster.accept.fabric)


def observe(obs: Observations, fabric: Finding | None = None) -> Observed:
    """Parse every command of the observations contract."""
    return Observed(
        smi=parse_command(obs, "nvidia_smi_xml", "nvidia-smi", parse_nvidia_smi_xml),
        nvlink=parse_command(obs, "nvidia_smi_nvlink", "nvidia-smi nvlink", parse_nvlink_status),
        fabricmanager=obs.get("fabricmanager"),
        ibstat=parse_command(obs, "ibstat", "ibstat", parse_ibstat),
        lsmod=parse_command(obs, "lsmod", "lsmod", parse_lsmod),
        lspci=parse_command(obs, "lspci_hca", "lspci", parse_lspci),
        dcgm=parse_command(obs, "dcgm_diag", "dcgmi diag", parse_dcgm_diag, results_on_failure=True),
        nccl_single=parse_command(
            obs, "nccl_single", "all_reduce_perf", parse_nccl_tests, results_on_failure=True
        ),
        fabric=fabric,
    )
