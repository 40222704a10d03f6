"""A module or action run by the `ansible` CLI on localhost, with the checkout's ansible.cfg."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

BIN = Path(sys.executable).parent


def run_module(
    module: str,
    args: dict[str, Any],
    *options: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`ansible localhost -c local OPTIONS -m MODULE -a ARGS`; options such as `-o`, `-e`, `--check`."""
    return subprocess.run(
        [str(BIN / "ansible"), "localhost", "-c", "local", *options, "-m", module, "-a", json.dumps(args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_NOCOLOR": "1", **(env or {})},
    )


def one_line_result(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The module's result from `-o` output (`localhost | SUCCESS => {...}`), after checking it succeeded."""
    assert result.returncode == 0, result.stdout + result.stderr
    answer: dict[str, Any] = json.loads(result.stdout.split("=>", 1)[1])
    return answer
