"""The gpucluster.cluster collection as a user gets it: built, installed elsewhere, run outside the checkout.

Also: the plugins' message when the gpucluster package is missing, and role READMEs that match their specs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.conftest import ROOT
from tools import role_readmes

BIN = Path(sys.executable).parent
COLLECTION = ROOT / "ansible"
ROLES = role_readmes.roles()
# The plugins' message names the Python that runs Ansible (this venv's) and the command to run.
INSTALL_HINT = re.compile(
    r"the Python that runs Ansible, (\S+), cannot import the gpucluster package .*?"
    r"install it there: (\S+) -m pip install gpucluster"
)

# A sitecustomize that takes the gpucluster package out of this Python (the editable install's finder and any
# sys.path entry holding it), as on a controller where only Ansible and the collection are installed.
HIDE_GPUCLUSTER = """\
import os, sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "gpucluster", "__init__.py"))]
"""


@dataclass(frozen=True)
class Installed:
    """A built tarball, installed into an otherwise empty collections folder; a folder to run Ansible in."""

    tarball: Path
    collections: Path
    workdir: Path
    env: dict[str, str]

    @property
    def copy(self) -> Path:
        """The installed collection."""
        return self.collections / "ansible_collections" / "gpucluster" / "cluster"


def _run(tool: str, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / tool), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def _clean_env() -> dict[str, str]:
    """This environment without the Ansible and Python settings that could point back at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    return env | {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def _build(source: Path, out: Path) -> Path:
    result = _run(
        "ansible-galaxy",
        "collection",
        "build",
        str(source),
        "--output-path",
        str(out),
        cwd=out.parent,
        env=_clean_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    version = yaml.safe_load((source / "galaxy.yml").read_text(encoding="utf-8"))["version"]
    tarball = out / f"gpucluster-cluster-{version}.tar.gz"
    assert tarball.is_file(), result.stdout
    return tarball


def _members(tarball: Path) -> set[str]:
    with tarfile.open(tarball) as archive:
        return {member.name for member in archive.getmembers() if member.isfile()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build ansible/, install the tarball into an empty folder, set up a work folder outside the checkout."""
    base = tmp_path_factory.mktemp("collection")
    assert not base.resolve().is_relative_to(ROOT)
    tarball = _build(COLLECTION, base / "dist")
    collections = base / "collections"
    collections.mkdir()
    result = _run(
        "ansible-galaxy",
        "collection",
        "install",
        str(tarball),
        "-p",
        str(collections),
        cwd=base,
        env=_clean_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    workdir = base / "work"
    workdir.mkdir()
    shutil.copy(ROOT / "clusters" / "example.yaml", workdir / "example.yaml")
    (workdir / "ansible.cfg").write_text(
        textwrap.dedent(f"""\
            [defaults]
            collections_path = {collections}
            collections_scan_sys_path = False

            [inventory]
            enable_plugins = gpucluster.cluster.cluster_file
            any_unparsed_is_failed = True
            """),
        encoding="utf-8",
    )
    env = _clean_env() | {"ANSIBLE_CONFIG": str(workdir / "ansible.cfg")}
    return Installed(tarball=tarball, collections=collections, workdir=workdir, env=env)


def _hidden_gpucluster(env: dict[str, str], folder: Path) -> dict[str, str]:
    """env for a Python that cannot import gpucluster (checked, so the tests below cannot pass vacuously)."""
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(HIDE_GPUCLUSTER, encoding="utf-8")
    hidden = env | {"PYTHONPATH": str(folder)}
    probe = subprocess.run(
        [sys.executable, "-c", "import gpucluster"],
        check=False,
        cwd=folder,
        env=hidden,
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0 and "No module named 'gpucluster'" in probe.stderr, probe.stderr
    return hidden


def _assert_names_this_python(output: str) -> None:
    match = INSTALL_HINT.search(output)
    assert match, output
    assert match.group(1) == match.group(2) and Path(match.group(1)).parent == BIN, match.group(0)


def test_tarball_holds_the_collection_and_no_checkout_files(installed: Installed) -> None:
    members = _members(installed.tarball)
    assert {"MANIFEST.json", "FILES.json", "README.md", "CHANGELOG.md", "meta/runtime.yml"} <= members
    assert {"playbooks/site.yml", "playbooks/accept.yml", "playbooks/image.yml"} <= members
    assert "plugins/plugin_utils/gpucluster_package.py" in members
    for role in ROLES:
        assert {f"roles/{role.name}/README.md", f"roles/{role.name}/meta/argument_specs.yml"} <= members
    assert "site.yml" not in members and "galaxy.yml" not in members
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]
    top = {member.split("/")[0] for member in members}
    expected = {
        "MANIFEST.json",
        "FILES.json",
        "README.md",
        "CHANGELOG.md",
        "meta",
        "playbooks",
        "plugins",
        "roles",
    }
    assert top == expected, f"unexpected in the tarball: {top - expected} (add to galaxy.yml build_ignore?)"


def test_build_ignore_leaves_out_bytecode_and_the_checkout_playbook(tmp_path: Path) -> None:
    source = tmp_path / "ansible"
    shutil.copytree(COLLECTION, source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for junk in ("plugins/lookup/__pycache__/render.cpython-311.pyc", "plugins/filter/stale.pyc"):
        (source / junk).parent.mkdir(parents=True, exist_ok=True)
        (source / junk).write_bytes(b"\0")
    assert (source / "site.yml").is_file()
    members = _members(_build(source, tmp_path / "dist"))
    assert "plugins/lookup/render.py" in members and "playbooks/site.yml" in members
    assert "site.yml" not in members
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]


def test_ansible_sees_only_the_installed_copy(installed: Installed) -> None:
    result = _run(
        "ansible-galaxy", "collection", "list", "gpucluster.cluster", cwd=installed.workdir, env=installed.env
    )
    assert result.returncode == 0, result.stderr
    version = yaml.safe_load((COLLECTION / "galaxy.yml").read_text(encoding="utf-8"))["version"]
    assert f"# {installed.collections / 'ansible_collections'}\n" in result.stdout
    assert result.stdout.count("gpucluster.cluster ") == 1 and version in result.stdout
    assert str(ROOT) not in result.stdout + result.stderr


def _installed_playbook(installed: Installed, playbook: str, option: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook -i example.yaml gpucluster.cluster.<playbook> <option>, in the installed copy."""
    return _run(
        "ansible-playbook",
        "-i",
        "example.yaml",
        f"gpucluster.cluster.{playbook}",
        option,
        cwd=installed.workdir,
        env=installed.env,
    )


@pytest.mark.parametrize("playbook", ["site", "accept", "image"])
def test_installed_playbook_syntax(installed: Installed, playbook: str) -> None:
    result = _installed_playbook(installed, playbook, "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"playbook: {installed.copy / 'playbooks' / playbook}.yml" in result.stdout


def _included_roles(tasks: list[dict[str, object]]) -> set[str]:
    """Roles of this collection that a task list includes with ansible.builtin.include_role."""
    names = set()
    for task in tasks:
        include = task.get("ansible.builtin.include_role")
        if isinstance(include, dict) and str(include.get("name", "")).startswith("gpucluster.cluster."):
            names.add(str(include["name"]).removeprefix("gpucluster.cluster."))
        for key in ("block", "rescue", "always"):
            nested = task.get(key)
            if isinstance(nested, list):
                names |= _included_roles(nested)
    return names


def test_installed_playbooks_run_every_role_of_the_collection(installed: Installed) -> None:
    listed = {}
    for playbook in ("site", "image", "accept"):
        result = _installed_playbook(installed, playbook, "--list-tasks")
        assert result.returncode == 0, result.stdout + result.stderr
        listed[playbook] = result.stdout
    run = {role.name for role in ROLES if f"gpucluster.cluster.{role.name} : " in "".join(listed.values())}
    # --list-tasks does not expand a dynamic include_role: a role another role runs that way counts with it.
    included = {
        name
        for role in run
        for tasks in (installed.copy / "roles" / role / "tasks").glob("*.yml")
        for name in _included_roles(yaml.safe_load(tasks.read_text()) or [])
    }
    missing = [role.name for role in ROLES if role.name not in run | included]
    assert not missing, f"roles without tasks in the installed site, image and accept playbooks: {missing}"
    # accept.yml's four plays run the role's four entry points, from the installed copy.
    for entry in ("main", "fabric", "admit", "summarize"):
        assert f"node_acceptance : Validating arguments against arg spec '{entry}'" in listed["accept"]


def test_installed_inventory_plugin_reads_the_cluster_file(installed: Installed) -> None:
    result = _run(
        "ansible-inventory", "-i", "example.yaml", "--graph", cwd=installed.workdir, env=installed.env
    )
    assert result.returncode == 0, result.stderr
    assert "@slurm_controller:" in result.stdout and "head01" in result.stdout
    assert "@rack_rack_b:" in result.stdout and "gpu-b04" in result.stdout


def test_installed_role_docs_load(installed: Installed) -> None:
    names = [f"gpucluster.cluster.{role.name}" for role in ROLES]
    result = _run("ansible-doc", "-t", "role", *names, cwd=installed.workdir, env=installed.env)
    assert result.returncode == 0, result.stderr
    assert all(f"> ROLE: *{name}*" in result.stdout for name in names), result.stdout[:2000]


def test_installed_inventory_plugin_without_gpucluster_says_how_to_install(
    installed: Installed, tmp_path: Path
) -> None:
    env = _hidden_gpucluster(installed.env, tmp_path / "hide")
    result = _run("ansible-inventory", "-i", "example.yaml", "--graph", cwd=installed.workdir, env=env)
    assert result.returncode != 0
    assert "gpucluster.cluster.cluster_file: the Python that runs Ansible" in result.stderr, result.stderr
    _assert_names_this_python(result.stderr)


def test_installed_render_lookup_without_gpucluster_says_how_to_install(
    installed: Installed, tmp_path: Path
) -> None:
    env = _hidden_gpucluster(installed.env, tmp_path / "hide")
    lookup = (
        "lookup('gpucluster.cluster.render', 'slurm/slurm.conf',"
        " cluster_file='example.yaml', host=inventory_hostname)"
    )
    result = _run(
        "ansible",
        "localhost",
        "-m",
        "ansible.builtin.debug",
        "-a",
        f"msg={{{{ {lookup} }}}}",
        cwd=installed.workdir,
        env=env,
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "gpucluster.cluster.render: the Python that runs Ansible" in output, output
    _assert_names_this_python(output)


def test_checkout_falls_back_to_its_own_gpucluster(tmp_path: Path) -> None:
    env = _hidden_gpucluster(_clean_env(), tmp_path / "hide")
    result = _run("ansible-inventory", "-i", "clusters/example.yaml", "--graph", cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr
    assert "@rack_rack_a:" in result.stdout and "gpu-a04" in result.stdout


def _helper(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gpucluster_package_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checkout_fallback_applies_only_in_a_checkout(installed: Installed) -> None:
    relative = Path("plugins/plugin_utils/gpucluster_package.py")
    assert _helper(installed.copy / relative).checkout_root() is None
    linked = ROOT / "collections" / "ansible_collections" / "gpucluster" / "cluster" / relative
    assert _helper(linked).checkout_root() == ROOT


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_readme_is_generated_from_its_argument_specs(role: Path) -> None:
    readme = role / "README.md"
    assert readme.is_file(), f"{readme}: missing; run `make role-docs`"
    assert readme.read_text(encoding="utf-8") == role_readmes.role_readme(role), (
        f"{readme}: stale; run `make role-docs` and commit the result"
    )
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    text = readme.read_text(encoding="utf-8")
    assert all(f"\n| `{name}` |" in text for name in spec["options"])


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_argument_spec_defaults_are_the_role_s_defaults(role: Path) -> None:
    """Ansible templates the spec's defaults when it validates a role's arguments: a default the role's
    defaults/main.yml does not hold documents another value, or names a variable that is gone."""
    defaults_file = role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.exists() else {}
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry_point, spec in specs.items():
        for name, option in (spec.get("options") or {}).items():
            if "default" in option:
                assert name in (defaults or {}), (
                    f"{role.name} {entry_point}: {name} has no defaults/main.yml value"
                )
                assert option["default"] == defaults[name], f"{role.name} {entry_point}: {name}"


def test_collection_readme_lists_every_role() -> None:
    path = COLLECTION / "README.md"
    assert path.read_text(encoding="utf-8") == role_readmes.collection_readme(), (
        f"{path}: role list stale; run `make role-docs`"
    )
    assert all(f"(roles/{role.name}/README.md)" in path.read_text(encoding="utf-8") for role in ROLES)


def test_readme_shows_every_field_of_an_option(tmp_path: Path) -> None:
    role = tmp_path / "demo_role"
    (role / "meta").mkdir(parents=True)
    spec = """\
        argument_specs:
          main:
            short_description: A demo
            description:
              - Writes C(/etc/demo.conf) with O(demo_role_mode); see U(https://example.org).
            options:
              demo_role_mode:
                type: str
                choices: [fast, safe]
                default: safe
                description: How it runs; B(never) I(both). The rest, e.g. this, only ansible-doc shows.
              demo_role_hosts:
                type: list
                elements: str
                required: true
                description: ["Hosts, e.g. <name>.", Second paragraph.]
              demo_role_limits:
                type: dict
                description: Limits.
                options:
                  cpu_pct: {type: int, default: 50, description: CPU share.}
              demo_role_filter:
                type: str
                default: "{{ x | default('') }}"
                description: A default with a pipe.
        """
    (role / "meta" / "argument_specs.yml").write_text(textwrap.dedent(spec), encoding="utf-8")
    text = role_readmes.role_readme(role, tmp_path)
    assert text.startswith(role_readmes.NOTICE + "\n# gpucluster.cluster.demo_role\n\nA demo.\n")
    assert "Writes `/etc/demo.conf` with `demo_role_mode`; see <https://example.org>." in text
    rows = [line for line in text.splitlines() if line.startswith("| `demo_role")]
    assert rows == [
        '| `demo_role_mode` | `str`: `"fast"`, `"safe"` | `"safe"` | How it runs; **never** *both*. |',
        "| `demo_role_hosts` | `list` of `str` | required | Hosts, e.g. \\<name>. |",
        "| `demo_role_limits` | `dict` | none | Limits. |",
        "| `demo_role_limits.cpu_pct` | `int` | `50` | CPU share. |",
        "| `demo_role_filter` | `str` | `\"{{ x \\| default('') }}\"` | A default with a pipe. |",
    ]
    assert "Platforms (`meta/main.yml`): none declared." in text
    assert "- `main`: A demo." in text


def test_generator_check_mode_names_a_stale_readme(tmp_path: Path) -> None:
    collection = tmp_path / "ansible"
    shutil.copytree(COLLECTION / "roles" / "slurm_node", collection / "roles" / "slurm_node")
    shutil.copy(COLLECTION / "README.md", collection / "README.md")
    for path, text in role_readmes.generated(collection).items():
        path.write_text(text, encoding="utf-8")
    assert role_readmes.stale(collection) == []
    readme = collection / "roles" / "slurm_node" / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("slurmd", "slurmctld"), encoding="utf-8")
    assert role_readmes.stale(collection) == [readme]
    (collection / "roles" / "slurm_other").mkdir()
    shutil.copytree(
        collection / "roles" / "slurm_node" / "meta", collection / "roles" / "slurm_other" / "meta"
    )
    assert role_readmes.stale(collection) == [
        readme,
        collection / "roles" / "slurm_other" / "README.md",
        collection / "README.md",
    ]
