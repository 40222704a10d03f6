"""One snapshot per stack catches unintended drift. Regenerate (and review the diff) with:

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/stacks/test_snapshots.py

Asset hashes and CDK's version metadata are masked; user data is masked because the render golden
files and test_capacity.py::test_user_data_is_the_rendered_cloud_init already pin it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.stacks.conftest import CLUSTER_FILES, Synth

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
HASH = re.compile(r"[0-9a-f]{64}")


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<user-data>" if k == "UserData" else _mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, str):
        return HASH.sub("<hash>", value)
    return value


def normalized(template: dict[str, Any]) -> dict[str, Any]:
    """The template without CDK version metadata, with hashes and user data masked."""
    doc = json.loads(json.dumps(template))
    doc["Resources"] = {k: v for k, v in doc["Resources"].items() if v["Type"] != "AWS::CDK::Metadata"}
    doc.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    if not doc.get("Conditions"):
        doc.pop("Conditions", None)
    masked: dict[str, Any] = _mask(doc)
    return masked


@pytest.mark.parametrize("stem", [p.stem for p in CLUSTER_FILES])
def test_stack_snapshots(stem: str, synth_file: Callable[[str], Synth]) -> None:
    synth = synth_file(stem)
    for stack_id, template in synth.templates.items():
        path = SNAPSHOTS / stem / f"{stack_id}.json"
        current = json.dumps(normalized(template), indent=1, sort_keys=True) + "\n"
        if os.environ.get("UPDATE_SNAPSHOTS") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(current)
        assert path.exists(), f"no snapshot {path}; create it with UPDATE_SNAPSHOTS=1 and review it"
        assert current == path.read_text(), f"{stem}/{stack_id} drifted; review, then UPDATE_SNAPSHOTS=1"
