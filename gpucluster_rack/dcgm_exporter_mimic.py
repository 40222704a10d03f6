#!/usr/bin/python3
"""gpucluster mimic of dcgm-exporter: per-GPU DCGM fields, driven by a known load, on the real flags and port.

Installed by the mimic NVIDIA repository as /usr/bin/dcgm-exporter (standard library only: it runs with the
node's python3). Like the real exporter it serves the Prometheus text format on `--address` (default :9400),
collects only the fields its `--collectors` CSV names, labels each series `gpu`, `UUID`, `pci_bus_id`,
`device`, `modelName`, `Hostname` and `DCGM_FI_DRIVER_VERSION`, and adds `hpc_job` from the files of
`--hpc-job-mapping-dir` (one file per GPU index, one job ID per line; one series per job).
https://docs.nvidia.com/datacenter/cloud-native/gpu-telemetry/latest/dcgm-exporter.html

What the GPUs "do" comes from files a test or a job writes (the rack has no GPUs):
- `LOAD_DIR/<index>`: the fraction of time the graphics engine is active (0..1), what
  `gpucluster-mimic-gpu-load FRACTION SECONDS` writes for the GPUs of its job; no file: idle.
- `FAULT_DIR/<index>/<FIELD>`: a value injected for one field (an XID, ECC errors).
The other activity fields follow the load (SM occupancy, DRAM activity, power, memory used).
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOAD_DIR = Path("/run/gpucluster-mimic/gpu-load")
FAULT_DIR = Path("/run/gpucluster-mimic/gpu-faults")
DRIVER_FILE = Path("/run/gpucluster-mimic/module-version")
MODEL = "NVIDIA H100 80GB HBM3"
IDLE_WATTS, BUSY_WATTS = 70.0, 700.0
MEMORY_MIB = 81559.0


def field_values(load: float) -> dict[str, float]:
    """Every field the mimic knows, for a GPU whose graphics engine is active `load` of the time."""
    return {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": load,
        "DCGM_FI_PROF_SM_ACTIVE": load * 0.9,
        "DCGM_FI_PROF_SM_OCCUPANCY": load * 0.5,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": load * 0.6,
        "DCGM_FI_PROF_DRAM_ACTIVE": load * 0.4,
        "DCGM_FI_DEV_GPU_UTIL": round(load * 100),
        "DCGM_FI_DEV_POWER_USAGE": IDLE_WATTS + load * (BUSY_WATTS - IDLE_WATTS),
        "DCGM_FI_DEV_FB_USED": round(load * 0.75 * MEMORY_MIB),
        "DCGM_FI_DEV_FB_FREE": round(MEMORY_MIB - load * 0.75 * MEMORY_MIB),
        "DCGM_FI_DEV_GPU_TEMP": round(35 + load * 40),
        "DCGM_FI_DEV_XID_ERRORS": 0,
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 0,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0,
    }


def read_collectors(path: str) -> list[tuple[str, str, str]]:
    """(field, Prometheus type, help) of each non-comment line of a dcgm-exporter counters CSV."""
    fields = []
    with open(path, newline="") as handle:
        for row in csv.reader(handle):
            if not row or row[0].strip().startswith("#"):
                continue
            cells = [cell.strip() for cell in row] + ["", ""]
            fields.append((cells[0], cells[1] or "gauge", cells[2]))
    return fields


def _number(path: Path, default: float) -> float:
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def _jobs(mapping_dir: str | None, gpu: int) -> list[str]:
    if not mapping_dir:
        return []
    try:
        text = (Path(mapping_dir) / str(gpu)).read_text()
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def gpu_indices() -> list[int]:
    """The declared GPUs: one /dev/nvidiaN device node each, as the mimic nvidia-smi counts them."""
    found = (os.path.basename(path)[len("nvidia") :] for path in glob.glob("/dev/nvidia[0-9]*"))
    return sorted(int(index) for index in found if index.isdigit())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(collectors: list[tuple[str, str, str]], gpus: list[int], mapping_dir: str | None) -> str:
    """The metrics page: HELP and TYPE per collected field, one sample per GPU (and per job on it)."""
    hostname = socket.gethostname()
    driver = DRIVER_FILE.read_text().strip() if DRIVER_FILE.exists() else ""
    lines: list[str] = []
    for field, kind, help_text in collectors:
        lines += [f"# HELP {field} {help_text}", f"# TYPE {field} {kind}"]
        for gpu in gpus:
            load = min(max(_number(LOAD_DIR / str(gpu), 0.0), 0.0), 1.0)
            known = field_values(load)
            if field not in known:
                continue
            value = _number(FAULT_DIR / str(gpu) / field, float(known[field]))
            labels = {
                "gpu": str(gpu),
                "UUID": f"GPU-mimic-{gpu}",
                "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0",
                "device": f"nvidia{gpu}",
                "modelName": MODEL,
                "Hostname": hostname,
                "DCGM_FI_DRIVER_VERSION": driver,
            }
            for job in _jobs(mapping_dir, gpu) or [""]:
                tagged = {**labels, "hpc_job": job} if job else labels
                rendered = ",".join(f'{name}="{_escape(text)}"' for name, text in tagged.items())
                shown = f"{value:.6f}" if field.startswith("DCGM_FI_PROF_") else f"{value:g}"
                lines.append(f"{field}{{{rendered}}} {shown}")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Serve /metrics until stopped, reading the load, faults and job mapping at every scrape."""
    parser = argparse.ArgumentParser(prog="dcgm-exporter")
    parser.add_argument("-a", "--address", default=":9400")
    parser.add_argument("-f", "--collectors", default="/etc/dcgm-exporter/default-counters.csv")
    parser.add_argument("--hpc-job-mapping-dir", default=os.environ.get("DCGM_HPC_JOB_MAPPING_DIR"))
    parser.add_argument("-r", "--remote-hostengine-info", default="localhost:5555")
    args, _ = parser.parse_known_args()  # the real exporter's other flags change nothing here
    host, _, port = args.address.rpartition(":")
    LOAD_DIR.mkdir(parents=True, exist_ok=True)
    LOAD_DIR.chmod(0o1777)  # jobs write their GPUs' load (gpucluster-mimic-gpu-load runs as the job's user)
    collectors = read_collectors(args.collectors)

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = exposition(collectors, gpu_indices(), args.hpc_job_mapping_dir).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    ThreadingHTTPServer((host or "0.0.0.0", int(port)), Metrics).serve_forever()


if __name__ == "__main__":
    main()
