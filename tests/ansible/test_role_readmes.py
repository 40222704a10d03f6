"""Role READMEs stay short and point to the hand-written page that holds each role's design."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tools import role_readmes

ROLES = role_readmes.roles()
# A README is a frame of about 20 lines (summary, two short paragraphs, platforms, entry points, link) plus
# a table row per variable: 60 holds the largest role today (gpu_nvidia_driver, 21 variables, 44 lines)
# with room for a dozen more variables, and no longer fits a design essay.
MAX_README_LINES = 60
DEPTH_LINK = re.compile(r"\]\((\.\./\.\./\.\./docs/roles/([a-z][a-z0-9_]*)\.md)\)")


def _readme(role: Path) -> str:
    return (role / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_readme_is_short(role: Path) -> None:
    lines = _readme(role).count("\n")
    assert lines <= MAX_README_LINES, (
        f"{role / 'README.md'}: {lines} lines (at most {MAX_README_LINES}); move the design from the spec's"
        f" description to docs/roles/{role.name}.md and keep the description to a short paragraph"
    )


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_readme_links_to_its_depth_page_which_exists(role: Path) -> None:
    links = DEPTH_LINK.findall(_readme(role))
    assert [name for _, name in links] == [role.name], links
    page = (role / links[0][0]).resolve()
    assert page == role_readmes.depth_page(role) and page.is_file(), (
        f"{page}: missing; write the role's design there"
    )
    assert f"(../../ansible/roles/{role.name}/README.md)" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_readme_says_what_the_test_racks_show(role: Path) -> None:
    assert "**Tested**" in _readme(role)
    assert "## What the test racks show" in role_readmes.depth_page(role).read_text(encoding="utf-8")


def test_every_entry_point_a_playbook_runs_is_listed() -> None:
    imports = role_readmes.playbook_entry_points(role_readmes.COLLECTION)
    assert ("node_acceptance", "fabric") in imports and ("gpu_nccl", "image") in imports
    for (role, entry_point), playbooks in imports.items():
        listed = f"- `{entry_point}` ({', '.join(f'`{p}`' for p in sorted(set(playbooks)))}): "
        assert listed in _readme(role_readmes.COLLECTION / "roles" / role), (role, entry_point)


def test_an_entry_point_without_a_spec_needs_an_opening_comment(tmp_path: Path) -> None:
    collection = tmp_path / "ansible"
    role = collection / "roles" / "demo_role"
    (role / "meta").mkdir(parents=True)
    (role / "tasks").mkdir()
    (collection / "playbooks").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs: {main: {short_description: A demo, options: {}}}\n", encoding="utf-8"
    )
    play = """\
        - hosts: all
          tasks:
            - ansible.builtin.import_role: {name: gpucluster.cluster.demo_role, tasks_from: image}
        """
    (collection / "playbooks" / "image.yml").write_text(textwrap.dedent(play), encoding="utf-8")
    (role / "tasks" / "image.yml").write_text("---\n- name: Do it\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="open it with a comment"):
        role_readmes.role_readme(role, collection)
    opening = "---\n# The image's entry point (playbooks/image.yml): the demo, held. Details e.g. here.\n"
    (role / "tasks" / "image.yml").write_text(opening + "- name: Do it\n", encoding="utf-8")
    assert "\n- `image` (`playbooks/image.yml`): the demo, held.\n" in role_readmes.role_readme(
        role, collection
    )


def test_depth_pages_are_the_roles_of_the_collection() -> None:
    pages = sorted(path.stem for path in (ROOT / "docs" / "roles").glob("*.md"))
    assert pages == [role.name for role in ROLES]
