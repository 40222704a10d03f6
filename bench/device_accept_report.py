"""Assemble a device's raw probe outputs into observations.json and print what our parsers read.

`python3 bench/device_accept_report.py OUT` after bench/device_accept.sh. Standard library and the
parsers of gpucluster.accept only (they need nothing else), so it runs on a bare GPU machine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpucluster.accept.dcgm import parse_dcgm_diag
from gpucluster.accept.errors import ParseError
from gpucluster.accept.ibstat import parse_ibstat
from gpucluster.accept.lsmod import parse_lsmod
from gpucluster.accept.lspci import parse_lspci
from gpucluster.accept.nccl_tests import parse_nccl_tests
from gpucluster.accept.nvidia_smi import parse_nvidia_smi_xml, parse_nvlink_status

# The probes accept.yml runs (ansible/roles/node_acceptance/vars/main.yml), in its observations contract;
# the others are kept as raw files only.
CONTRACT = (
    "nvidia_smi_xml",
    "nvidia_smi_nvlink",
    "fabricmanager",
    "ibstat",
    "lsmod",
    "lspci_hca",
    "dcgm_diag",
    "nccl_single",
)
PARSERS: dict[str, Callable[[str], object]] = {
    "nvidia_smi_xml": parse_nvidia_smi_xml,
    "nvidia_smi_nvlink": parse_nvlink_status,
    "ibstat": parse_ibstat,
    "lsmod": parse_lsmod,
    "lspci_hca": parse_lspci,
    "lspci_gpu": parse_lspci,
    "dcgm_diag": parse_dcgm_diag,
    "nccl_single": parse_nccl_tests,
}


def read(raw: Path, name: str) -> dict[str, object]:
    """One probe's rc, stdout and stderr as bench/device_accept.sh kept them."""
    text = {part: (raw / f"{name}.{part}").read_text(errors="replace") for part in ("stdout", "stderr", "rc")}
    return {"rc": int(text["rc"].strip() or -1), "stdout": text["stdout"], "stderr": text["stderr"]}


def describe(value: object) -> str:
    """A short, readable account of a parser's result."""
    return repr(value) if len(repr(value)) <= 1500 else repr(value)[:1500] + " …"


def main() -> None:
    """Write observations.json and print each probe's parse."""
    out = Path(sys.argv[1])
    raw = out / "raw"
    probes = {
        p.name.removesuffix(".rc"): read(raw, p.name.removesuffix(".rc")) for p in sorted(raw.glob("*.rc"))
    }
    observations = {"commands": {name: probes[name] for name in CONTRACT if name in probes}}
    (out / "observations.json").write_text(json.dumps(observations, indent=2) + "\n")
    print(f"wrote {out / 'observations.json'}")
    for name, probe in probes.items():
        parser = PARSERS.get(name)
        head = f"{name}: rc {probe['rc']}"
        if parser is None:
            print(f"{head}\n  {str(probe['stdout']).strip()}")
            continue
        try:
            print(f"{head}, parsed: {describe(parser(str(probe['stdout'])))}")
        except ParseError as exc:
            first = (str(probe["stdout"]) + str(probe["stderr"])).strip().splitlines()[:1]
            print(f"{head}, not parsed: {exc} (output: {first[0][:200] if first else 'none'})")


if __name__ == "__main__":
    main()
