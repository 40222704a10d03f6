"""The ECC gate on recorded nvidia-smi output: what a healthy production GPU shows passes, what needs a
reset or a replacement fails, corrected errors only above the profile's limit."""

from __future__ import annotations

import dataclasses

import pytest

from gpucluster.accept.checks_gpu import ecc_errors
from gpucluster.accept.declared import Declared, declared_for
from gpucluster.accept.observed import observe
from gpucluster.clusterfile import Cluster
from tests.accept.test_checks import SAMPLES, node

HEALTHY = (SAMPLES / "healthy" / "nvidia-smi-q-x.xml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def dgx(example: Cluster) -> Declared:
    return declared_for(example, "gpu-a01")


def _first_gpu(**tags: str) -> str:
    """The healthy sample with the first GPU's counters set (`aggregate/dram_correctable="40"` …)."""
    text = HEALTHY
    for path, value in tags.items():
        section, _, tag = path.rpartition("__")
        start = text.index(f"<{section}>") if section else 0
        opening, closing = f"<{tag}>", f"</{tag}>"
        at = text.index(opening, start)
        end = text.index(closing, at)
        text = text[: at + len(opening)] + value + text[end:]
    return text


def _verdict(d: Declared, xml: str) -> tuple[str, str]:
    result = ecc_errors(d, observe(node("healthy", nvidia_smi_xml={"rc": 0, "stdout": xml, "stderr": ""})))
    return result.status, result.found


def test_history_and_corrected_errors_within_the_limit_pass(dgx: Declared) -> None:
    xml = _first_gpu(
        aggregate__dram_uncorrectable="3", aggregate__dram_correctable="250", volatile__dram_correctable="7"
    )
    status, found = _verdict(dgx, xml)
    assert status == "pass"
    assert found == "8 GPUs fit: at most 250 corrected, 3 uncorrectable in their history"


@pytest.mark.parametrize(
    ("tags", "fault"),
    [
        ({"volatile__dram_uncorrectable": "1"}, "1 uncorrectable since the driver loaded (reset the GPU)"),
        (
            {"volatile__sram_uncorrectable_secded": "2"},
            "2 uncorrectable since the driver loaded (reset the GPU)",
        ),
        ({"remapped_rows__remapped_row_pending": "Yes"}, "a row remap pending (reset the GPU)"),
        ({"remapped_rows__remapped_row_failure": "Yes"}, "a row remap failed (replace the GPU)"),
        (
            {"aggregate__sram_threshold_exceeded": "Yes"},
            "the SRAM uncorrectable threshold exceeded (replace the GPU)",
        ),
        ({"aggregate__dram_correctable": "1001"}, "1001 corrected over its life (> 1000)"),
    ],
)
def test_what_needs_a_reset_or_a_replacement_fails(dgx: Declared, tags: dict[str, str], fault: str) -> None:
    status, found = _verdict(dgx, _first_gpu(**tags))
    assert status == "fail"
    assert found.endswith(fault) and found.count("GPU ") == 1, found


def test_the_corrected_limit_comes_from_the_profile(dgx: Declared) -> None:
    xml = _first_gpu(aggregate__dram_correctable="250")
    assert _verdict(dataclasses.replace(dgx, max_corrected_ecc_errors=100), xml)[0] == "fail"
    assert _verdict(dataclasses.replace(dgx, max_corrected_ecc_errors=250), xml)[0] == "pass"
