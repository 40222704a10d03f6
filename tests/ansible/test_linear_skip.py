"""The linear_skip strategy: false-`when` tasks skip without a worker, and a play's results match linear's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

BIN = Path(sys.executable).parent

PLAYBOOK = """
- name: Every kind of task the strategy must judge as a worker would
  hosts: localhost
  gather_facts: false
  strategy: "{{ gpucluster_strategy }}"
  vars:
    flag: false
  tasks:
    - name: Skipped by a false when
      ansible.builtin.command: "false"
      when: flag
      register: skipped_plain
    - name: Skipped with the when in a list
      ansible.builtin.command: "false"
      when: [true, "not flag", flag]
      register: skipped_list
    - name: Runs where when holds
      ansible.builtin.set_fact:
        ran: true
      when: not flag
    - name: A looped task goes to a worker
      ansible.builtin.debug:
        msg: "{{ item }}"
      loop: [1, 2]
      when: item == 2
      register: looped
    - name: An include skipped by its when
      ansible.builtin.include_tasks: no-such-file.yml
      when: flag
    - name: A when naming a connection variable goes to a worker
      ansible.builtin.debug:
        msg: never
      when: ansible_connection | default('x') == 'nothing'
      register: connection_var
    - name: A when that fails to evaluate goes to a worker, which reports it
      ansible.builtin.debug:
        msg: never
      when: no_such_variable
      ignore_errors: true
      register: broken
    - name: A secret task's skip stays censored
      ansible.builtin.command: "false"
      when: flag
      no_log: true
      register: secret
    - name: An argument check that passes runs in ansible-playbook's process
      ansible.builtin.validate_argument_spec:
        argument_spec: {flag: {type: bool, required: true}}
      register: check_passed
    - name: An argument check that fails goes to a worker, which reports it
      ansible.builtin.validate_argument_spec:
        argument_spec: {missing: {type: str, required: true}}
      ignore_errors: true
      register: check_failed
    - name: Dump what every task registered
      vars:
        # One template body under two sets of delimiters (the first line of `other` changes them): the
        # compile cache must tell them apart.
        body: "[[ flag ]] {{ flag }}"
        other: "#jinja2:variable_start_string:'[[', variable_end_string:']]'\\n[[ flag ]] {{ flag }}"
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'plain': skipped_plain, 'list': skipped_list, 'ran': ran, 'looped': looped | length,
                      'connection': connection_var, 'broken': broken is failed,
                      'secret': secret, 'check_passed': check_passed,
                      'check_failed': check_failed.argument_errors,
                      'body': body, 'other': other} | to_json }}"
        mode: "0600"
"""


def _run(tmp_path: Path, strategy: str) -> tuple[dict[str, object], str, int]:
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    out = tmp_path / f"{strategy}.json"
    result = subprocess.run(
        [str(BIN / "ansible-playbook"), str(playbook), "-e", f"gpucluster_strategy={strategy} out={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        # ANSIBLE_DEBUG logs each forked worker ("worker is N (out of M available)")
        env={**os.environ, "ANSIBLE_DEBUG": "1", "ANSIBLE_LOCALHOST_WARNING": "false"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    recap = [line for line in result.stdout.splitlines() if line.startswith("localhost") and "ok=" in line]
    return json.loads(out.read_text()), recap[-1], result.stdout.count("worker is ")


def test_false_when_skips_without_a_worker_and_the_play_ends_as_with_linear(tmp_path: Path) -> None:
    """Same recap and registered results as ansible.builtin.linear, with five fewer workers forked."""
    ours, our_recap, our_workers = _run(tmp_path, "gpucluster.cluster.linear_skip")
    builtin, builtin_recap, builtin_workers = _run(tmp_path, "linear")
    assert ours == builtin
    assert our_recap == builtin_recap
    assert ours["plain"]["skipped"] and ours["plain"]["false_condition"] == "flag"
    assert ours["list"]["false_condition"] == "flag"
    assert ours["secret"]["skipped"] and ours["connection"]["skipped"] and ours["broken"] is True
    assert ours["check_passed"]["msg"] == "The arg spec validation passed" and ours["check_failed"]
    assert (ours["body"], ours["other"]) == ("[[ flag ]] False", "False {{ flag }}")
    # plain, list, include and secret skip and the passing check runs in ansible-playbook's own process
    assert builtin_workers - our_workers == 5, (builtin_workers, our_workers)
