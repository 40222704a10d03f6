"""The collection on the newest ansible-core it claims, from a Debian 13 controller, against a test rack.

The tested range is ansible/meta/runtime.yml's `requires_ansible`: the rest of `make test` runs on the
oldest end (requirements-dev.txt's ansible-core, the venv's), this module on the newest
(requirements-ansible-newest.txt), which needs Python 3.12 or newer, so it runs from the controller root
of gpucluster_rack/controller_root.py. There: the collection's tests without a rack (tests/ansible: plugins,
playbook syntax, the built and installed collection; ansible-lint stays on the venv's), then rack "n"
(ctl + n1) converged with ansible/site.yml, converged again with nothing to change, and n1 registered
with slurmctld.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from gpucluster.accept.admission import AWAITING_REASON
from gpucluster_rack import ROOT
from gpucluster_rack.controller_root import Controller, ensure_root, pinned_ansible_core
from gpucluster_rack.playbook import Playbook
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.sh import progress
from gpucluster_rack.slurm_state import slurm_nodes, wait_for
from tests.rack.conftest import require_rack_prerequisites

RACK = "n"
LOGS = ROOT / "build" / "ansible-newest"  # each converge's output, for a failure's post-mortem
# A style check, not a behaviour of the collection: it runs on the venv's ansible-core (tests/ansible).
LINT = "tests/ansible/test_ansible.py::test_ansible_lint_production_profile"


@dataclass
class Converged:
    """Rack "n" and the two converges of ansible/site.yml from the controller root."""

    rack: Rack
    first: Playbook
    second: Playbook


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Controller:
    """The controller root (built once, then cached), with a scratch folder for this module's commands."""
    require_rack_prerequisites()
    return Controller(root=ensure_root(), scratch=tmp_path_factory.mktemp("controller"))


@pytest.fixture(scope="module")
def converged(controller: Controller) -> Iterator[Converged]:
    """Rack "n" converged twice from the controller root (the second run only after a first that passed)."""
    booted = Rack(name=RACK, size=2)
    try:
        booted.up()
        progress(f"rack {RACK}: converge with ansible-core {pinned_ansible_core()}")
        first = controller.converge(booted)
        second = controller.converge(booted) if first.rc == 0 else first
        LOGS.mkdir(parents=True, exist_ok=True)
        (LOGS / "first.log").write_text(first.output)
        (LOGS / "second.log").write_text(second.output)
        yield Converged(booted, first, second)
    finally:
        down(RACK)


def test_the_controller_runs_the_pinned_ansible_core_on_python_3_12_or_newer(controller: Controller) -> None:
    rc, output = controller.run(["ansible", "--version"])
    assert rc == 0, output
    assert output.splitlines()[0] == f"ansible [core {pinned_ansible_core()}]", output
    python = re.search(r"^\s*python version = 3\.(\d+)\.", output, re.M)
    assert python and int(python.group(1)) >= 12, output
    assert "Warning" not in output and "WARNING" not in output, output


def test_every_playbook_of_the_collection_passes_the_syntax_check(controller: Controller) -> None:
    playbooks = sorted(path.name for path in (ROOT / "ansible" / "playbooks").glob("*.yml"))
    assert "site.yml" in playbooks
    for playbook in playbooks:
        rc, output = controller.run(
            [
                "ansible-playbook",
                "-i",
                "clusters/example.yaml",
                f"ansible/playbooks/{playbook}",
                "--syntax-check",
            ]
        )
        assert rc == 0, f"{playbook}: {output}"


def test_the_collection_tests_without_a_rack_pass(controller: Controller) -> None:
    command = [
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-rs",
        "tests/ansible",
        "--deselect",
        LINT,
    ]
    rc, output = controller.run(command)
    summary = output.strip().splitlines()[-1]
    assert rc == 0, output[-6000:]
    # The root holds what every one of them needs (build-essential, apt lists): a skip would hide a test.
    assert "passed" in summary and "skipped" not in summary and "error" not in summary, output[-3000:]


def test_the_rack_is_driven_by_the_pinned_ansible_core(controller: Controller, converged: Converged) -> None:
    rack = converged.rack
    rc, output = controller.in_rack(
        rack,
        [
            "ansible",
            "-i",
            str(rack.cluster_file),
            "n1",
            "-m",
            "ansible.builtin.setup",
            "-a",
            "filter=ansible_hostname",
        ],
    )
    assert rc == 0, output
    assert '"ansible_hostname": "n1"' in output, output
    rc, output = controller.in_rack(
        rack,
        [
            "ansible",
            "-i",
            str(rack.cluster_file),
            "n1",
            "-m",
            "ansible.builtin.debug",
            "-a",
            "var=ansible_version.full",
        ],
    )
    assert rc == 0 and f'"ansible_version.full": "{pinned_ansible_core()}"' in output, output


def test_site_converges_the_rack(converged: Converged) -> None:
    run = converged.first
    assert run.rc == 0, run.output[-4000:]
    assert set(run.recap()) == {"ctl", "n1"}, run.output[-2000:]
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in run.recap().values()), run.recap()


def test_no_deprecation_is_reported(converged: Converged) -> None:
    for run in (converged.first, converged.second):
        warned = [line for line in run.output.splitlines() if "DEPRECATION" in line]
        assert not warned, "\n".join(warned)


def test_a_second_converge_changes_nothing(converged: Converged) -> None:
    run = converged.second
    assert run is not converged.first, "the first converge failed"
    assert run.rc == 0, run.output[-4000:]
    recap = run.recap()
    assert set(recap) == {"ctl", "n1"}
    assert {host: counters["changed"] for host, counters in recap.items()} == {"ctl": 0, "n1": 0}, recap


def test_the_compute_node_registers_with_slurmctld(converged: Converged) -> None:
    """A new node registers drained until acceptance admits it; it answers (no `*` in sinfo's state)."""
    rack = converged.rack
    wait_for(
        "n1 registered, awaiting acceptance",
        lambda: slurm_nodes(rack, "n1") == {"n1": ("IDLE+DRAIN", AWAITING_REASON)},
        seen=lambda: slurm_nodes(rack, "n1"),
    )
    assert rack.ssh("ctl", "sinfo -h -n n1 -o %t").strip() == "drain"
