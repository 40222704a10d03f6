"""Parse `ibstat` (infiniband-diags): channel adapters, their ports, state, physical state and rate."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpucluster.accept.errors import ParseError

_CA = re.compile(r"^CA '([^']+)'$")
_PORT = re.compile(r"^Port (\d+):$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*(.*)$")


@dataclass
class IbPort:
    """One port of a channel adapter."""

    number: int
    state: str = ""  # Active, Down, Initializing, Armed
    physical_state: str = ""  # LinkUp, Polling, Disabled
    rate_gbps: int | None = None
    link_layer: str = ""  # InfiniBand or Ethernet


@dataclass
class ChannelAdapter:
    """One HCA (`mlx5_0`) with its ports."""

    name: str
    ports: list[IbPort] = field(default_factory=list)


def _set_port_field(port: IbPort, key: str, value: str) -> None:
    if key == "State":
        port.state = value
    elif key == "Physical state":
        port.physical_state = value
    elif key == "Rate":
        port.rate_gbps = int(value) if value.isdigit() else None
    elif key == "Link layer":
        port.link_layer = value


def parse_ibstat(text: str) -> list[ChannelAdapter]:
    """Parse `ibstat` output; empty output means no CAs; raise ParseError on anything else."""
    cas: list[ChannelAdapter] = []
    port: IbPort | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if ca := _CA.match(line):
            cas.append(ChannelAdapter(ca.group(1)))
            port = None
        elif (number := _PORT.match(line)) and cas:
            port = IbPort(int(number.group(1)))
            cas[-1].ports.append(port)
        elif (kv := _FIELD.match(line)) and cas:
            if port is not None:
                _set_port_field(port, kv.group(1), kv.group(2).strip())
        else:
            raise ParseError(f"unexpected line in `ibstat` output: {line[:80]!r}")
    return cas
