"""accept.yml keeps unaccepted nodes out of users' reach, in the order it runs its steps.

The rack test (tests/rack/test_e2e.py) runs the playbook; this reads it, following each play into the
node_acceptance role's entry point (tests/ansible/role_tasks.py), so a reordering that would open a window
(resume before the reservation, end the reservation before the drains, admit before the fabric test) fails
here at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.ansible.role_tasks import ACCEPT, COLLECTION, Task, argv, entry_point, flattened, plays
from tests.conftest import ROOT

ROLE = COLLECTION / "roles" / "node_acceptance"
PROBE_PLAY = "Accept compute nodes against their declared hardware profile"
FABRIC_PLAY = "Test the fabric across the nodes that passed"
ADMIT_PLAY = "Admit the nodes that passed"


def _fabric_block() -> Task:
    (block,) = [t for t in plays()[FABRIC_PLAY] if "block" in t]
    return block


def _index(tasks: list[Task], name: str) -> int:
    (found,) = [i for i, t in enumerate(tasks) if t.get("name") == name]
    return found


def test_the_playbook_runs_the_role_s_entry_points_in_order() -> None:
    """Probe and judge, then the fabric test, then admission, then the summary: each a play on every node."""
    data = yaml.safe_load(ACCEPT.read_text())
    assert [[entry_point(t) for t in play["tasks"]] for play in data] == [
        [("node_acceptance", "main")],
        [("node_acceptance", "fabric")],
        [("node_acceptance", "admit")],
        [("node_acceptance", "summarize")],
    ]
    assert {play["hosts"] for play in data} == {"slurm_compute"}


def test_a_node_with_jobs_is_reported_and_neither_probed_judged_nor_drained() -> None:
    tasks = plays()[PROBE_PLAY]
    idle = _index(tasks, "Note whether the node is idle")
    probes = _index(tasks, "Run the hardware probes")
    save = _index(tasks, "Save the probe outputs")
    judge = next(i for i, t in enumerate(tasks) if "evaluate" in argv(t))
    drain = next(i for i, t in enumerate(tasks) if "state=DRAIN" in argv(t))
    skip = next(i for i, t in enumerate(tasks) if "skip" in argv(t))
    assert _index(tasks, "Look for jobs on the node") < idle < probes < save < judge < drain, tasks
    assert idle < skip and tasks[skip]["when"] == "node_acceptance_busy_jobs | length > 0"
    for step in (probes, save, judge, drain):
        when = tasks[step]["when"]
        assert "not node_acceptance_busy_jobs" in (when if isinstance(when, list) else [when]), tasks[step]
    assert tasks[drain]["when"][-1] == "node_acceptance_verdict.action == 'drain'"


def test_tag_probe_only_probes_and_saves() -> None:
    """`--tags probe`: the settings check, the probes and their observations; no verdict, nothing in Slurm."""
    tagged = [t for t in plays()[PROBE_PLAY] if "probe" in t.get("tags", [])]
    assert [t["name"] for t in tagged] == [
        "Check the node has its profile's acceptance settings",
        "Look for jobs on the node",
        "Read the node's Slurm state and reason",
        "Note whether the node is idle",
        "Run the hardware probes",
        "Create the report directory",
        "Save the probe outputs",
    ]
    assert [argv(t)[0] for t in tagged if argv(t)] == ["squeue", "sinfo"]  # reads only
    others = [t for name, tasks in plays().items() for t in flattened(tasks) if name != PROBE_PLAY]
    assert not [t for t in others if "probe" in t.get("tags", [])]


def test_the_reservation_comes_first_and_ends_last() -> None:
    block = _fabric_block()
    steps = [" ".join(argv(t)[:3]) for t in block["block"]]
    create = steps.index("scontrol create reservation")
    resume = next(i for i, t in enumerate(block["block"]) if "state=RESUME" in argv(t))
    runs = next(
        i
        for i, t in enumerate(block["block"])
        if t.get("ansible.builtin.command", {}).get("argv") == "{{ item.argv }}"
    )
    drain = next(i for i, t in enumerate(block["block"]) if "state=DRAIN" in argv(t))
    assert create < resume < runs < drain, steps
    created = argv(block["block"][create])
    assert {"flags=maint,ignore_jobs", "users=root", "duration=UNLIMITED"} <= set(created), created
    assert [argv(t)[:2] for t in block["always"]] == [["scontrol", "delete"]]
    assert any("state=DRAIN" in argv(t) for t in block["rescue"])
    assert any("ansible.builtin.fail" in t for t in block["rescue"])  # the run still fails, after the cleanup


def test_the_runs_are_planned_in_the_reservation_the_play_creates() -> None:
    """The plan puts --reservation=NAME in every srun (tests/accept/test_fabric.py); NAME is the play's."""
    block = _fabric_block()
    (created,) = [argv(t) for t in block["block"] if argv(t)[:3] == ["scontrol", "create", "reservation"]]
    (name,) = [a.split("=", 1)[1] for a in created if a.startswith("reservationname=")]
    tasks = plays()[FABRIC_PLAY]
    (planned,) = [t for t in tasks if "fabric-plan" in argv(t)]
    assert tasks.index(planned) < tasks.index(block)
    assert argv(planned)[argv(planned).index("--reservation") + 1] == name


def test_only_a_verdict_to_resume_lifts_a_drain() -> None:
    """An operator's drain stays: every RESUME is of nodes whose verdict's action is `resume`."""
    resumes = [t for tasks in plays().values() for t in flattened(tasks) if "state=RESUME" in argv(t)]
    assert len(resumes) == 2, resumes
    fabric, admit = resumes
    assert argv(fabric)[2] == "nodename={{ __node_acceptance_fabric_resumed | join(',') }}"
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    assert (
        "selectattr('node_acceptance_verdict.action', '==', 'resume')"
        in role_vars["__node_acceptance_fabric_resumed"]
    )
    assert "__node_acceptance_final.action == 'resume'" in admit["when"]
    assert admit in plays()[ADMIT_PLAY]


def _render_fabric_observations(tmp_path: Path, facts: dict[str, Any]) -> Any:
    """fabric.observations.json.j2 rendered by Ansible's template module with `facts`; the JSON it wrote."""
    out = tmp_path / "fabric.json"
    playbook = tmp_path / "render.yml"
    template = {
        "src": str(ROLE / "templates" / "fabric.observations.json.j2"),
        "dest": str(out),
        "mode": "0644",
    }
    play = {"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.template": template}]}
    playbook.write_text(yaml.safe_dump([play]))
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-e",
            f"@{tmp_path / 'facts.json'}",
            str(playbook),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(out.read_text())


def test_the_fabric_runs_are_saved_with_a_run_that_did_not_start(tmp_path: Path) -> None:
    """A run Ansible could not start (no rc) is saved as rc 127 with Ansible's message, for the judge."""
    ran = {"rc": 1, "stdout": "# Avg bus bandwidth : 1.2", "stderr": "", "msg": "non-zero return code"}
    facts = {
        "node_acceptance_fabric_plan": {"hosts": ["n1", "n2"]},
        "__node_acceptance_fabric_runs": {
            "results": [
                {"item": {"name": "all", "hosts": ["n1", "n2"], "argv": ["srun", "-N2", "a_r_p"]}, **ran},
                {"item": {"name": "n1+n2", "hosts": ["n1", "n2"], "argv": ["srun", "x"]}, "msg": "no host"},
            ]
        },
    }
    assert _render_fabric_observations(tmp_path, facts) == {
        "hosts": ["n1", "n2"],
        "runs": [
            {"name": "all", "hosts": ["n1", "n2"], "cmd": "srun -N2 a_r_p", "rc": 1}
            | {"stdout": "# Avg bus bandwidth : 1.2", "stderr": ""},
            {
                "name": "n1+n2",
                "hosts": ["n1", "n2"],
                "cmd": "srun x",
                "rc": 127,
                "stdout": "",
                "stderr": "no host",
            },
        ],
    }
