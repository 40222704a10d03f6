"""What the acceptance playbook collected on one node: the contract between Ansible and gpucluster.

The playbook writes one JSON object per node::

    {"commands": {NAME: {"cmd": str, "rc": int, "stdout": str, "stderr": str} | null, ...}}

``cmd`` is the exact command line the node ran, kept for the operator reading the file (and for the
test that proves the profile's acceptance settings reach the probes); the checks ignore it.

NAME                what the playbook ran
``nvidia_smi_xml``  ``nvidia-smi -q -x``
``nvidia_smi_nvlink`` ``nvidia-smi nvlink -s``
``fabricmanager``   ``systemctl is-active nvidia-fabricmanager``
``ibstat``          ``ibstat``
``lsmod``           ``lsmod``
``lspci_hca``       ``lspci -vv -d 15b3:``  (Mellanox/NVIDIA networking vendor id)
``dcgm_diag``       ``dcgmi diag -r LEVEL -j``  (LEVEL = the profile's acceptance.dcgm_level)
``nccl_single``     ``all_reduce_perf -b SIZE -e SIZE -f 2 -g N``  (SIZE = acceptance.nccl_test_size,
                    N = the profile's GPU count)

A null value or rc 127 means the tool is not installed; a missing key is the same as null. Any other
non-zero rc is a failed command: its checks fail with the command's own first line of output. The
runs across nodes are not a node's: they have their own file (gpucluster.accept.fabric).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpucluster.accept.errors import AcceptInputError, first_line

COMMANDS: Final = (
    "nvidia_smi_xml",
    "nvidia_smi_nvlink",
    "fabricmanager",
    "ibstat",
    "lsmod",
    "lspci_hca",
    "dcgm_diag",
    "nccl_single",
)
NOT_INSTALLED_RC: Final = 127


@dataclass(frozen=True)
class CommandResult:
    """Exit status and output of one command run on the node."""

    rc: int
    stdout: str
    stderr: str

    @property
    def installed(self) -> bool:
        """False when the shell could not find the command."""
        return self.rc != NOT_INSTALLED_RC

    def error_line(self) -> str:
        """The command's own first line of complaint: stderr first, else stdout, else the rc."""
        return first_line(self.stderr) or first_line(self.stdout) or f"exit status {self.rc}"


@dataclass(frozen=True)
class Observations:
    """Every command result of one node, by NAME; absent and null both map to None."""

    commands: dict[str, CommandResult | None]

    def get(self, name: str) -> CommandResult | None:
        """The result of command `name`, or None when it was not installed or not recorded."""
        return self.commands.get(name)


def _command(name: str, value: Any) -> CommandResult | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise AcceptInputError(f"commands.{name}: expected an object with rc, stdout, stderr, or null")
    rc, stdout, stderr = value.get("rc"), value.get("stdout", ""), value.get("stderr", "")
    if not isinstance(rc, int) or isinstance(rc, bool):
        raise AcceptInputError(f"commands.{name}.rc: expected an integer exit status, found {rc!r}")
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise AcceptInputError(f"commands.{name}: stdout and stderr must be strings")
    return CommandResult(rc, stdout, stderr)


def observations_from(data: Any) -> Observations:
    """Validate the decoded JSON of an observations file."""
    if not isinstance(data, dict) or not isinstance(data.get("commands"), dict):
        raise AcceptInputError('expected a JSON object {"commands": {NAME: {"rc", "stdout", "stderr"}}}')
    unknown = sorted(set(data["commands"]) - set(COMMANDS))
    if unknown:
        raise AcceptInputError(f"commands.{unknown[0]}: unknown command; known: {', '.join(COMMANDS)}")
    return Observations({name: _command(name, v) for name, v in data["commands"].items()})


def load_observations(path: Path) -> Observations:
    """Read an observations file; raise AcceptInputError with the path on any problem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AcceptInputError(f"{path}: cannot read the file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AcceptInputError(f"{path}: not valid JSON ({exc})") from None
    try:
        return observations_from(data)
    except AcceptInputError as exc:
        raise AcceptInputError(f"{path}: {exc}") from None
