"""Parse `lspci -vv` for PCIe link capability (`LnkCap`) and status (`LnkSta`) per device."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster.accept.errors import ParseError

_DEVICE = re.compile(r"^([0-9a-f]{2,4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] (.+)$")
_LINK = re.compile(r"^(LnkCap|LnkSta):\s.*?Speed ([0-9.]+)GT/s[^,]*, Width x(\d+)")


@dataclass
class PcieDevice:
    """One PCI function with its link speed (GT/s) and width (lanes), capable and current."""

    address: str
    description: str
    cap_speed_gts: float | None = None
    cap_width: int | None = None
    sta_speed_gts: float | None = None
    sta_width: int | None = None

    @property
    def at_max(self) -> bool:
        """Whether the link trained at its full capability."""
        return (self.sta_speed_gts, self.sta_width) == (self.cap_speed_gts, self.cap_width)


def parse_lspci(text: str) -> list[PcieDevice]:
    """Parse `lspci -vv` (any device filter); empty output means no devices."""
    devices: list[PcieDevice] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if not raw[0].isspace():
            match = _DEVICE.match(raw)
            if not match:
                raise ParseError(f"unexpected device line in `lspci -vv` output: {raw[:80]!r}")
            devices.append(PcieDevice(raw.split()[0], match.group(2)))
        elif not devices:
            raise ParseError("`lspci -vv` output must start with a device line (bus:dev.fn)")
        elif link := _LINK.match(raw.strip()):
            speed, width = float(link.group(2)), int(link.group(3))
            if link.group(1) == "LnkCap":
                devices[-1].cap_speed_gts, devices[-1].cap_width = speed, width
            else:
                devices[-1].sta_speed_gts, devices[-1].sta_width = speed, width
    return devices
