"""The rack harness raises the host's inotify instances per user before a node boots, and never lowers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_rack import node


def _limit_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: int) -> Path:
    path = tmp_path / "max_user_instances"
    path.write_text(f"{value}\n")
    monkeypatch.setattr(node, "INOTIFY_INSTANCES", path)
    return path


def test_the_kernel_default_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _limit_file(tmp_path, monkeypatch, 128)
    node.allow_many_nodes()
    assert int(path.read_text()) == node.MIN_INOTIFY_INSTANCES


def test_a_higher_limit_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _limit_file(tmp_path, monkeypatch, 1048576)
    node.allow_many_nodes()
    assert int(path.read_text()) == 1048576


def test_where_the_limit_cannot_be_changed_it_says_so_and_the_boot_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(node, "INOTIFY_INSTANCES", tmp_path / "missing" / "max_user_instances")
    node.allow_many_nodes()
    assert "more than about 15 nodes at once may not boot" in capsys.readouterr().err
