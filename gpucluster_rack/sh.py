"""Run commands for the test rack: checked, logged, never through a shell string."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence


def run(
    args: Sequence[str],
    *,
    check: bool = True,
    quiet: bool = False,
    timeout: float = 600,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command; raise with its stderr when check fails."""
    result = subprocess.run(
        list(args), capture_output=True, text=True, timeout=timeout, input=input_text, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    if not quiet and result.returncode != 0:
        print(f"(ignored) {' '.join(args)}: {result.stderr.strip()[-300:]}", file=sys.stderr)
    return result


def progress(message: str) -> None:
    """One progress line for long steps."""
    print(f"[rack] {message}", file=sys.stderr, flush=True)
