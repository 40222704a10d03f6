"""accept.yml's fabric play keeps unaccepted nodes out of users' reach, in the order it runs its steps.

The rack test (tests/rack/test_e2e.py) runs the play; this reads it, so a reordering that would open a
window (resume before the reservation, end the reservation before the drains) fails here at once.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import ROOT

PLAYBOOK = ROOT / "ansible" / "playbooks" / "accept.yml"


def _fabric_block() -> dict[str, Any]:
    plays = yaml.safe_load(PLAYBOOK.read_text())
    (play,) = [p for p in plays if p["name"] == "Test the fabric across the nodes that passed"]
    (block,) = [t for t in play["tasks"] if "block" in t]
    return dict(block)


def _argv(task: dict[str, Any]) -> list[str]:
    return list((task.get("ansible.builtin.command") or {}).get("argv", []))


def test_the_reservation_comes_first_and_ends_last() -> None:
    block = _fabric_block()
    steps = [" ".join(str(a) for a in _argv(t)[:3]) for t in block["block"]]
    create = steps.index("scontrol create reservation")
    resume = next(i for i, t in enumerate(block["block"]) if "state=RESUME" in _argv(t))
    runs = next(
        i
        for i, t in enumerate(block["block"])
        if t.get("ansible.builtin.command", {}).get("argv") == "{{ item.argv }}"
    )
    drain = next(i for i, t in enumerate(block["block"]) if "state=DRAIN" in _argv(t))
    assert create < resume < runs < drain, steps
    created = _argv(block["block"][create])
    assert {"flags=maint,ignore_jobs", "users=root", "duration=UNLIMITED"} <= set(created), created
    assert [_argv(t)[:2] for t in block["always"]] == [["scontrol", "delete"]]
    assert any("state=DRAIN" in _argv(t) for t in block["rescue"])
    assert any("ansible.builtin.fail" in t for t in block["rescue"])  # the run still fails, after the cleanup


def test_the_runs_are_planned_in_the_reservation_the_play_creates() -> None:
    """The plan puts --reservation=NAME in every srun (tests/accept/test_fabric.py); NAME is the play's."""
    block = _fabric_block()
    (created,) = [_argv(t) for t in block["block"] if _argv(t)[:3] == ["scontrol", "create", "reservation"]]
    (name,) = [a.split("=", 1)[1] for a in created if a.startswith("reservationname=")]
    (planned,) = [t for t in yaml.safe_load(PLAYBOOK.read_text())[1]["tasks"] if "fabric-plan" in _argv(t)]
    assert _argv(planned)[_argv(planned).index("--reservation") + 1] == name
