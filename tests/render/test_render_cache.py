"""The render cache Ansible's workers share: a hit skips the render, any input change misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.render import disk_cache as render_cache


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache dir and a one-template renderer source tree."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "slurm.conf.j2").write_text("v1\n")
    monkeypatch.setattr(render_cache, "SOURCES", (templates,))
    return templates


def test_a_hit_skips_the_render_and_any_input_change_renders_again(sources: Path, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: a\n")
    calls: list[str] = []

    def render() -> dict[str, str]:
        calls.append("render")
        return {"slurm/slurm.conf": f"rendered {len(calls)}\n"}

    first = render_cache.rendered(cluster, "n1", render)
    assert render_cache.rendered(cluster, "n1", render) == first and len(calls) == 1
    render_cache.rendered(cluster, "n2", render)  # another host
    cluster.write_text("name: b\n")  # another cluster file
    render_cache.rendered(cluster, "n1", render)
    (sources / "slurm.conf.j2").write_text("v2, a longer template\n")  # another renderer
    render_cache.rendered(cluster, "n1", render)
    assert len(calls) == 4


def test_an_unwritable_cache_still_renders(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the cache dir would go
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: a\n")
    assert render_cache.rendered(cluster, "n1", lambda: {"f": "x"}) == {"f": "x"}


def test_in_process_answers_skip_the_source_walk_until_the_cluster_file_changes(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render_cache, "_answers", {})
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: a\n")
    keys = 0
    real_key = render_cache.key

    def counted_key(cluster_file: Path, host: str) -> str:
        nonlocal keys
        keys += 1
        return real_key(cluster_file, host)

    monkeypatch.setattr(render_cache, "key", counted_key)
    first = render_cache.rendered_in_process(cluster, "n1", lambda: {"f": "1"})
    assert render_cache.rendered_in_process(cluster, "n1", lambda: {"f": "other"}) == first == {"f": "1"}
    assert keys == 1  # the second answer came from this process: no walk of the renderer's sources
    render_cache.rendered_in_process(cluster, "n2", lambda: {"f": "n2"})
    cluster.write_text("name: b\n")
    assert render_cache.rendered_in_process(cluster, "n1", lambda: {"f": "2"}) == {"f": "2"}
    assert keys == 3
