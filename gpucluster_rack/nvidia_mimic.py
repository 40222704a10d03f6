"""A local apt repository that mimics NVIDIA's CUDA repositories, built at test time with dpkg-deb.

Packages with NVIDIA's names and dependency shape, at a pinned and a newer release, in NVIDIA's
layout (`<distro>/<arch>/`, flat, signed InRelease, key `3bf863cc.pub` next to it):

- `debian12/x86_64/`: the Debian-style names of NVIDIA's debian12 repository (nvidia-driver, libcuda1,
  nvidia-kernel-open-dkms, cuda-drivers, ...), the branch only in the version;
- `ubuntu2404/x86_64/`: the branch-suffixed names of its ubuntu repositories (nvidia-open-570,
  nvidia-driver-570-open, libnvidia-compute-570, ...).

Both trees also carry CUDA, NCCL, DCGM and the DCGM exporter, and a kernel image and headers package for
the running kernel (nodes share the host's), each at two versions. Meta packages depend with `>=` where
NVIDIA's do, so a role that pins only the meta package gets the newer dependencies; nothing depends on
dkms (no module is built here). Daemons are placeholders: a unit that starts a process which only listens
where the real daemon would (DCGM's port 5555, the exporter's), so a role can start and wait for them.

The driver behaves like one across a reboot: the kernel-module package carries its version, which the
persistence daemon "loads" once per boot into /run; `nvidia-smi` answers with the loaded version only when
the NVML library package is the same release, and otherwise fails with NVIDIA's mismatch message. So after
an upgrade NVML fails until the node reboots, and a boot check sees the version that actually runs.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster_rack.signing import gpg, signing_home

BRANCH = "570"
PINNED = "570.172.08"
NEWER = "570.195.03"
CUDA = ("12.8.0", "12.8.1")
NVCC = ("12.8.61", "12.8.93")
NCCL = ("2.26.2-1+cuda12.8", "2.27.3-1+cuda12.8")
DCGM = ("1:4.4.2-1", "1:4.4.3-1")
EXPORTER = ("4.4.2-4.7.1-1", "4.4.3-4.7.2-1")
# DCGM 4 splits the engine (4-core) from its CUDA-specific diagnostics (4-cuda<major>).
DCGM_CUDA_MAJORS = ("12", "13")
KERNEL_REVISIONS = ("1", "2")
TREES = {"debian": "debian12/x86_64", "ubuntu": "ubuntu2404/x86_64"}

_SLEEPER = "#!/bin/sh\n# gpucluster mimic: a placeholder that only stays up.\nexec sleep infinity\n"
MIMIC = "usr/lib/gpucluster-mimic"
LOADED = "/run/gpucluster-mimic/module-version"
# A flag file a test writes to play a DKMS build that failed: no module loads at the next boot.
NO_MODULE_FLAG = "/etc/gpucluster-mimic/no-module"
# The persistence daemon "loads the kernel module" once per boot (/run is empty after a reboot): the
# module version is the one installed then, and stays until the next reboot, as a loaded module does.
_PERSISTENCED = f"""#!/bin/sh
# gpucluster mimic of nvidia-persistenced: loads the mimic module once per boot, then stays up.
if [ ! -e {LOADED} ] && [ ! -e {NO_MODULE_FLAG} ] && [ -e /{MIMIC}/module-version ]; then
  mkdir -p {LOADED.rsplit("/", 1)[0]} && cp /{MIMIC}/module-version {LOADED}
fi
exec sleep infinity
"""
# NVML answers only when the loaded module and the library are one release: the real messages and exit
# codes (nvidia-smi(1): 9 no driver, 18 driver/library version mismatch).
_NVIDIA_SMI = f"""#!/bin/sh
# gpucluster mimic of nvidia-smi: the loaded module's version, one line per declared GPU.
loaded=$(cat {LOADED} 2>/dev/null)
library=$(cat /{MIMIC}/nvml-version 2>/dev/null)
if [ -z "$loaded" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9
fi
if [ "$loaded" != "$library" ]; then
  echo "Failed to initialize NVML: Driver/library version mismatch"
  echo "NVML library version: $library"; exit 18
fi
i=0
for device in /dev/nvidia[0-9]*; do
  [ -e "$device" ] || continue
  case "$*" in
    *--query-gpu=driver_version*) echo "$loaded" ;;
    *) echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-mimic-$i)" ;;
  esac
  i=$((i + 1))
done
"""
_LISTENER = """#!/bin/sh
# gpucluster mimic: a placeholder that only listens where the real daemon would.
port={port}
while [ $# -gt 0 ]; do case "$1" in --address) port=${{2##*:}}; shift;; esac; shift; done
exec python3 -m http.server --bind 127.0.0.1 "$port"
"""


# The exporter serves DCGM fields driven by a known load (gpucluster_rack/dcgm_exporter_mimic.py); the
# package's default counters file has the fields of dcgm-exporter's own etc/default-counters.csv that the
# mimic knows, profiling ones included, but not SM occupancy or the ECC totals (commented out there).
_DEFAULT_COUNTERS = """# Format: DCGM field, Prometheus metric type, help message
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Frame buffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Frame buffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
# DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.
# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
# DCGM_FI_PROF_SM_OCCUPANCY, gauge, The ratio of number of warps resident on an SM.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active.
"""
# What a job runs to keep its GPUs busy a known fraction of the time: the exporter mimic reads the fraction
# per GPU. The job's GPUs are Slurm's indices (SLURM_STEP_GPUS or SLURM_JOB_GPUS), as the prolog maps them.
_GPU_LOAD = """#!/bin/sh
# gpucluster mimic: gpucluster-mimic-gpu-load FRACTION SECONDS keeps this job's GPUs FRACTION busy.
fraction=$1; seconds=$2
gpus=$(echo "${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}}" | tr ',' ' ')
mkdir -p /run/gpucluster-mimic/gpu-load
for gpu in $gpus; do echo "$fraction" > "/run/gpucluster-mimic/gpu-load/$gpu"; done
trap 'for gpu in $gpus; do rm -f "/run/gpucluster-mimic/gpu-load/$gpu"; done' EXIT
trap 'exit 143' INT TERM
sleep "$seconds" & wait $!
"""
EXPORTER_FILES = {
    "usr/bin/dcgm-exporter": (Path(__file__).with_name("dcgm_exporter_mimic.py")).read_text(),
    "usr/bin/gpucluster-mimic-gpu-load": _GPU_LOAD,
    "etc/dcgm-exporter/default-counters.csv": _DEFAULT_COUNTERS,
}


@dataclass(frozen=True)
class Deb:
    """One empty package: name, version, Depends line, placeholder files (path to text; bin/ ones 0755)."""

    name: str
    version: str
    depends: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _unit(name: str, binary: str) -> dict[str, str]:
    unit = (
        f"[Unit]\nDescription=gpucluster mimic of {name} (placeholder)\n\n"
        f"[Service]\nExecStart={binary}\n\n[Install]\nWantedBy=multi-user.target\n"
    )
    return {f"lib/systemd/system/{name}.service": unit}


def _fabricmanager(version: str) -> list[Deb]:
    files = {
        "usr/bin/nv-fabricmanager": _SLEEPER,
        **_unit("nvidia-fabricmanager", "/usr/bin/nv-fabricmanager"),
    }
    return [
        Deb(f"nvidia-fabricmanager-{BRANCH}", f"{version}-1", files=files),
        Deb(
            f"cuda-drivers-fabricmanager-{BRANCH}",
            f"{version}-1",
            f"nvidia-fabricmanager-{BRANCH} (= {version}-1)",
        ),
    ]


def _versioned(name: str, version: str) -> dict[str, str]:
    return {f"{MIMIC}/{name}": f"{version}\n"}


def debian_driver(version: str) -> list[Deb]:
    """NVIDIA's debian12 shape: Debian's names, (=) dependencies inside the driver, cuda-drivers (>=)."""
    v = f"{version}-1"
    module, nvml = _versioned("module-version", version), _versioned("nvml-version", version)
    kernel_deps = f"nvidia-kernel-support (= {v}), firmware-nvidia-gsp (= {v})"
    persistenced = {
        "usr/bin/nvidia-persistenced": _PERSISTENCED,
        **_unit("nvidia-persistenced", "/usr/bin/nvidia-persistenced"),
    }
    return [
        Deb(
            "nvidia-driver",
            v,
            f"nvidia-driver-libs (= {v}), nvidia-driver-bin (= {v}), "
            f"nvidia-kernel-open-dkms (= {v}) | nvidia-kernel-dkms (= {v}), nvidia-kernel-support (= {v})",
        ),
        Deb(
            "nvidia-driver-libs",
            v,
            f"libcuda1 (= {v}), libnvidia-ml1 (= {v}), libnvidia-ptxjitcompiler1 (= {v})",
        ),
        Deb("nvidia-driver-bin", v),
        Deb("nvidia-kernel-open-dkms", v, kernel_deps, module),
        Deb("nvidia-kernel-dkms", v, kernel_deps, module),
        Deb("nvidia-kernel-support", v),
        Deb("firmware-nvidia-gsp", v),
        Deb("libcuda1", v),
        Deb("libnvidia-ml1", v, files=nvml),
        Deb("libnvidia-ptxjitcompiler1", v),
        Deb("libnvidia-cfg1", v),
        Deb("nvidia-smi", v, f"libnvidia-ml1 (= {v})", {"usr/bin/nvidia-smi": _NVIDIA_SMI}),
        Deb("nvidia-persistenced", v, f"libnvidia-cfg1 (= {v})", persistenced),
        Deb(
            "cuda-drivers",
            v,
            f"nvidia-driver (>= {version}), nvidia-smi (>= {version}), libcuda1 (>= {version})",
        ),
        Deb(f"cuda-drivers-{BRANCH}", v, f"cuda-drivers (= {v})"),
        *_fabricmanager(version),
    ]


def ubuntu_driver(version: str) -> list[Deb]:
    """NVIDIA's ubuntu shape: branch-suffixed names; the meta packages depend with >=."""
    v, b = f"{version}-1", BRANCH
    module, nvml = _versioned("module-version", version), _versioned("nvml-version", version)
    persistenced = {
        "usr/bin/nvidia-persistenced": _PERSISTENCED,
        **_unit("nvidia-persistenced", "/usr/bin/nvidia-persistenced"),
    }
    driver_deps = (
        f"libnvidia-compute-{b} (= {v}), nvidia-utils-{b} (= {v}), nvidia-compute-utils-{b} (= {v}), "
        f"nvidia-kernel-common-{b} (= {v})"
    )
    return [
        Deb(f"nvidia-open-{b}", v, f"nvidia-driver-{b}-open (>= {version})"),
        Deb(
            f"cuda-drivers-{b}",
            v,
            f"nvidia-driver-{b} (>= {version}) | nvidia-driver-{b}-open (>= {version})",
        ),
        Deb(f"nvidia-driver-{b}-open", v, f"{driver_deps}, nvidia-dkms-{b}-open (= {v})"),
        Deb(f"nvidia-driver-{b}", v, f"{driver_deps}, nvidia-dkms-{b} (= {v})"),
        Deb(
            f"nvidia-dkms-{b}-open",
            v,
            f"nvidia-kernel-source-{b}-open (= {v}), nvidia-kernel-common-{b} (= {v})",
            module,
        ),
        Deb(f"nvidia-dkms-{b}", v, f"nvidia-kernel-common-{b} (= {v})", module),
        Deb(f"nvidia-kernel-source-{b}-open", v),
        Deb(f"nvidia-kernel-common-{b}", v),
        Deb(f"libnvidia-compute-{b}", v, files=nvml),
        Deb(f"nvidia-utils-{b}", v, f"libnvidia-compute-{b} (= {v})", {"usr/bin/nvidia-smi": _NVIDIA_SMI}),
        Deb(f"nvidia-compute-utils-{b}", v, f"libnvidia-compute-{b} (= {v})", persistenced),
        *_fabricmanager(version),
    ]


def stack(kernel: str) -> list[Deb]:
    """CUDA, NCCL, DCGM, the exporter and the running kernel's packages, each at a pinned and a newer one."""
    debs: list[Deb] = []
    for cuda, nvcc in zip(CUDA, NVCC, strict=True):
        debs += [
            Deb(
                "cuda-toolkit-12-8",
                f"{cuda}-1",
                f"cuda-nvcc-12-8 (>= {NVCC[0]}), cuda-toolkit-12-8-config-common",
            ),
            Deb("cuda-nvcc-12-8", f"{nvcc}-1"),
            Deb("cuda-toolkit-12-8-config-common", f"{cuda}-1"),
        ]
    for nccl in NCCL:
        debs += [Deb("libnccl2", nccl), Deb("libnccl-dev", nccl, f"libnccl2 (= {nccl})")]
    for dcgm, exporter in zip(DCGM, EXPORTER, strict=True):
        engine = {
            "usr/bin/nv-hostengine": _LISTENER.format(port=5555),
            **_unit("nvidia-dcgm", "/usr/bin/nv-hostengine"),
        }
        debs += [
            Deb("datacenter-gpu-manager-4-core", dcgm, files=engine),
            *(
                Deb(f"datacenter-gpu-manager-4-cuda{cuda}", dcgm, f"datacenter-gpu-manager-4-core (= {dcgm})")
                for cuda in DCGM_CUDA_MAJORS
            ),
            Deb(
                "datacenter-gpu-manager-exporter",
                exporter,
                f"datacenter-gpu-manager-4-core (>= {DCGM[0]})",
                EXPORTER_FILES,
            ),
        ]
    for revision in KERNEL_REVISIONS:
        debs += [Deb(f"linux-image-{kernel}", revision), Deb(f"linux-headers-{kernel}", revision)]
    return debs


def build_deb(deb: Deb, out: Path, work: Path) -> None:
    """dpkg-deb the package into out (named name_version_amd64.deb) through a work directory."""
    root = work / f"{deb.name}_{deb.version.replace(':', '%3a')}"
    (root / "DEBIAN").mkdir(parents=True)
    control = [
        f"Package: {deb.name}",
        f"Version: {deb.version}",
        "Architecture: amd64",
        "Maintainer: gpucluster test rack <rack@gpucluster.invalid>",
        "Priority: optional",
        "Section: misc",
        "Description: gpucluster mimic of NVIDIA's package (empty)",
    ]
    if deb.depends:
        control.insert(3, f"Depends: {deb.depends}")
    (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
    for path, text in deb.files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(0o755 if "/bin/" in f"/{path}" else 0o644)
    name = f"{deb.name}_{deb.version.split(':')[-1]}_amd64.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", str(root), str(out / name)],
        check=True,
        capture_output=True,
    )


def release_text(tree: Path, origin: str = "gpucluster mimic of NVIDIA") -> str:
    """A flat repository's Release file over the Packages and Packages.gz in tree."""
    lines = [
        f"Origin: {origin}",
        f"Label: {origin}",
        "Architectures: amd64",
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}",
        "SHA256:",
    ]
    for name in ("Packages", "Packages.gz"):
        data = (tree / name).read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {name}")
    return "\n".join(lines) + "\n"


def build(root: Path, kernel: str) -> dict[str, Path]:
    """Build both trees under root (emptied first); returns naming shape -> tree directory."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with signing_home() as home:
        trees = {}
        for shape, relative in TREES.items():
            tree = root / relative
            tree.mkdir(parents=True)
            driver = debian_driver if shape == "debian" else ubuntu_driver
            with tempfile.TemporaryDirectory() as work:
                for deb in [*driver(PINNED), *driver(NEWER), *stack(kernel)]:
                    build_deb(deb, tree, Path(work))
            index = subprocess.run(
                ["dpkg-scanpackages", "--multiversion", "."], cwd=tree, check=True, capture_output=True
            ).stdout
            (tree / "Packages").write_bytes(index)
            (tree / "Packages.gz").write_bytes(gzip.compress(index))
            (tree / "Release").write_text(release_text(tree))
            gpg(home, "--yes", "--clearsign", "--output", str(tree / "InRelease"), str(tree / "Release"))
            gpg(home, "--yes", "--armor", "--output", str(tree / "3bf863cc.pub"), "--export")
            trees[shape] = tree
        return trees
