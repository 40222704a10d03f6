"""Checks of the GPUs against the profile: count, model, memory, driver, ECC, NVLink, persistence."""

from __future__ import annotations

from collections import Counter

from gpucluster.accept.declared import Declared
from gpucluster.accept.errors import first_line
from gpucluster.accept.nvidia_smi import Gpu
from gpucluster.accept.observed import Observed
from gpucluster.accept.results import CheckResult, failed, skipped, verdict

# nvidia-smi reports usable framebuffer, a little under the marketing size (81559 MiB on an H100 80GB).
MEMORY_TOLERANCE_FRACTION = 0.02


def listed_gpus(obs: Observed) -> tuple[tuple[Gpu, ...], str]:
    """The GPUs nvidia-smi listed, and why there are none when there are none."""
    if obs.smi.value is None:
        return (), obs.smi.problem
    if not obs.smi.value.gpus:
        return (), "nvidia-smi lists no GPUs"
    return obs.smi.value.gpus, ""


def _short(gpu: Gpu) -> str:
    return gpu.bus_id.removeprefix("00000000:") or "?"


def gpu_count(d: Declared, obs: Observed) -> CheckResult:
    """As many GPUs as the profile declares."""
    gpus, problem = listed_gpus(obs)
    expected = f"{d.gpu_count} × {d.gpu.name}"
    return verdict("gpu_count", len(gpus) == d.gpu_count, expected, f"{len(gpus)} GPUs", problem)


def gpu_model(d: Declared, obs: Observed) -> CheckResult:
    """Every GPU is the declared model, by the name nvidia-smi reports."""
    if d.gpu_count == 0:
        return skipped("gpu_model", "the profile declares no GPUs")
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return failed("gpu_model", d.gpu.name, "no GPUs", problem)
    found = ", ".join(f"{n} × {name}" for name, n in Counter(g.name for g in gpus).items())
    return verdict("gpu_model", all(g.name == d.gpu.name for g in gpus), d.gpu.name, found)


def gpu_memory(d: Declared, obs: Observed) -> CheckResult:
    """Every GPU shows the model's memory, within what the driver keeps back."""
    if d.gpu_count == 0:
        return skipped("gpu_memory", "the profile declares no GPUs")
    min_mib = int(d.gpu.memory_gib * 1024 * (1 - MEMORY_TOLERANCE_FRACTION))
    expected = f"≥ {min_mib} MiB per GPU ({d.gpu.memory_gib} GiB)"
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return failed("gpu_memory", expected, "no GPUs", problem)
    short = [f"{_short(g)} {g.memory_mib} MiB" for g in gpus if g.memory_mib < min_mib]
    found = ", ".join(short) if short else f"{min(g.memory_mib for g in gpus)} MiB or more on every GPU"
    return verdict("gpu_memory", not short, expected, found)


def driver_version(d: Declared, obs: Observed) -> CheckResult:
    """The loaded driver is the version pinned in the cluster file."""
    if d.gpu_count == 0:
        return skipped("driver_version", "the profile declares no GPUs")
    expected = f"driver {d.driver_version}"
    if obs.smi.value is None:
        return failed("driver_version", expected, "no driver", obs.smi.problem)
    found = f"driver {obs.smi.value.driver_version or 'unknown'}"
    return verdict("driver_version", obs.smi.value.driver_version == d.driver_version, expected, found)


def _ecc_faults(gpu: Gpu, max_corrected: int) -> list[str]:
    """Why this GPU's memory is not fit for jobs (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/)."""
    faults = []
    if gpu.ecc_volatile.uncorrectable:
        faults.append(
            f"{gpu.ecc_volatile.uncorrectable} uncorrectable since the driver loaded (reset the GPU)"
        )
    if gpu.remap_pending:
        faults.append("a row remap pending (reset the GPU)")
    if gpu.remap_failed:
        faults.append("a row remap failed (replace the GPU)")
    if gpu.sram_threshold_exceeded:
        faults.append("the SRAM uncorrectable threshold exceeded (replace the GPU)")
    if gpu.ecc_aggregate.corrected > max_corrected:
        faults.append(f"{gpu.ecc_aggregate.corrected} corrected over its life (> {max_corrected})")
    return faults


def ecc_errors(d: Declared, obs: Observed) -> CheckResult:
    """No uncorrectable errors since the driver loaded, no pending or failed row remaps, corrected ≤ limit.

    Aggregate uncorrectable errors are history that row remapping already dealt with: reported, not failed.
    """
    if d.gpu_count == 0:
        return skipped("ecc_errors", "the profile declares no GPUs")
    expected = (
        "no uncorrectable ECC error since the driver loaded, no pending or failed row remap, "
        f"at most {d.max_corrected_ecc_errors} corrected per GPU"
    )
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return failed("ecc_errors", expected, "no GPUs", problem)
    bad = [
        f"GPU {_short(g)} " + ", ".join(faults)
        for g in gpus
        if (faults := _ecc_faults(g, d.max_corrected_ecc_errors))
    ]
    if bad:
        return failed("ecc_errors", expected, "; ".join(bad))
    corrected = max(g.ecc_aggregate.corrected for g in gpus)
    history = sum(g.ecc_aggregate.uncorrectable for g in gpus)
    found = f"{len(gpus)} GPUs fit: at most {corrected} corrected, {history} uncorrectable in their history"
    return verdict("ecc_errors", True, expected, found)


def persistence_mode(d: Declared, obs: Observed) -> CheckResult:
    """Persistence mode is on for every GPU, so the driver stays initialised between jobs."""
    if d.gpu_count == 0:
        return skipped("persistence_mode", "the profile declares no GPUs")
    expected = f"persistence mode Enabled on {d.gpu_count} GPUs"
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return failed("persistence_mode", expected, "no GPUs", problem)
    off = [_short(g) for g in gpus if not g.persistence_mode]
    found = f"Disabled on GPU {', '.join(off)}" if off else f"Enabled on {len(gpus)} GPUs"
    return verdict("persistence_mode", not off, expected, found)


def nvlink_up(d: Declared, obs: Observed) -> CheckResult:
    """On NVSwitch profiles, every NVLink link of every GPU is active."""
    if not d.nvswitch:
        return skipped("nvlink_up", "the profile has no NVSwitch")
    expected = f"all NVLink links active on {d.gpu_count} GPUs"
    gpus, problem = listed_gpus(obs)
    if not gpus:
        return failed("nvlink_up", expected, "no GPUs", problem)
    if obs.nvlink.value is None:
        return failed("nvlink_up", expected, "no NVLink status", obs.nvlink.problem)
    down = [f"GPU {g.index} link {n}" for g in obs.nvlink.value for n, up in g.links_active.items() if not up]
    down += [f"GPU {g.index} no links" for g in obs.nvlink.value if not g.links_active]
    listed = len(obs.nvlink.value)
    found = f"inactive: {', '.join(down)}" if down else f"all links active on {listed} GPUs"
    return verdict("nvlink_up", not down and listed == d.gpu_count, expected, found)


def fabric_manager(d: Declared, obs: Observed) -> CheckResult:
    """On NVSwitch profiles, nvidia-fabricmanager is active (without it CUDA sees no NVLink peers)."""
    if not d.nvswitch:
        return skipped("fabric_manager", "the profile has no NVSwitch")
    expected = "nvidia-fabricmanager active"
    result = obs.fabricmanager
    if result is None or not result.installed:
        return failed("fabric_manager", expected, "no state", "systemctl: not installed")
    state = first_line(result.stdout) or "unknown"
    problem = first_line(result.stderr)
    return verdict("fabric_manager", result.rc == 0 and state == "active", expected, state, problem)
