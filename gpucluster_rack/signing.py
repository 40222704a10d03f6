"""A throw-away GnuPG signing key for the mimic repositories and installers built at test time."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def gpg(home: Path, *args: str) -> str:
    """Run gpg in home in batch mode; return stdout."""
    return subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--quiet", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@contextlib.contextmanager
def signing_home(uid: str = "gpucluster mimic <mimic@gpucluster.invalid>") -> Iterator[Path]:
    """A GnuPG home with one new ed25519 signing key; removed (and its agent stopped) afterwards."""
    home = Path(tempfile.mkdtemp(prefix="gpucluster-mimic-gpg-"))
    os.chmod(home, 0o700)
    try:
        gpg(
            home,
            "--passphrase",
            "",
            "--pinentry-mode",
            "loopback",
            "--quick-gen-key",
            uid,
            "ed25519",
            "sign",
            "never",
        )
        yield home
    finally:
        # gpg started an agent for this home: stop it (only this one) before removing the home.
        subprocess.run(
            ["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], check=False, capture_output=True
        )
        shutil.rmtree(home, ignore_errors=True)


def fingerprint(home: Path) -> str:
    """The fingerprint of the home's one key."""
    rows = gpg(home, "--with-colons", "--fingerprint").splitlines()
    return next(row.split(":")[9] for row in rows if row.startswith("fpr:"))
