"""clusters/example.yaml pinned to the driver the recorded sample nodes ran, for judging those samples.

The samples under tests/accept/samples/ are real tool outputs of nodes that ran driver 570.172.08; the example
now pins the 580 branch, which would fail every sample's driver_version check for a reason no test is about.
"""

from __future__ import annotations

import re

from tests.conftest import ROOT

SAMPLE_DRIVER = "570.172.08"
EXAMPLE = ROOT / "build" / "tests-accept" / "example.yaml"


def _pinned_to_the_samples() -> str:
    text = (ROOT / "clusters" / "example.yaml").read_text(encoding="utf-8")
    text, branches = re.subn(r'(?m)^(  nvidia_driver_branch: )"[0-9]+"', r'\g<1>"570"', text)
    text, drivers = re.subn(r'(?m)^(  nvidia_driver: )"[0-9.]+"', rf'\g<1>"{SAMPLE_DRIVER}"', text)
    assert branches == drivers == 1, "clusters/example.yaml no longer pins nvidia_driver(_branch) on one line"
    return text


EXAMPLE.parent.mkdir(parents=True, exist_ok=True)
EXAMPLE.write_text(_pinned_to_the_samples(), encoding="utf-8")
