#!/usr/bin/python
"""Ansible module: read a node's packages, accounts, files and services in one module run."""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import grp
import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from typing import Any

DOCUMENTATION = r"""
---
module: node_state
short_description: Read what a role would change on a node, in one module run
description:
  - A re-run of a converged rack changes nothing, so its cost is the checks. Each builtin module run
    costs a Python start and an AnsiballZ unpack on the node (about 0.25 s there); a role that checks
    packages, accounts, files and services with builtin modules pays that five to ten times.
  - This module reads all of it at once. Roles run the builtin module that changes a thing only when
    this module's answer shows it differs (see the gpucluster.cluster.state_current filter), so a re-run
    costs one module run per role.
  - Read-only; it never changes the node and runs the same in check mode.
  - Its action plugin runs this file with the node's plain Python (no AnsiballZ, no Ansible imports;
    about a tenth of a builtin module's node CPU), which is why the reading needs only the standard library.
options:
  paths:
    description: Files or directories to stat; regular files also get a sha1 checksum.
    type: list
    elements: str
    default: []
  read:
    description:
      - Small text files whose content is returned (for a block or line check).
      - An entry with a glob character returns every file it matches.
    type: list
    elements: str
    default: []
  services:
    description: systemd units whose active and enabled state is returned.
    type: list
    elements: str
    default: []
  accounts:
    description: Names looked up as both user and group.
    type: list
    elements: str
    default: []
  packages:
    description: Return the installed and held packages (dpkg or rpm).
    type: bool
    default: false
  package_names:
    description:
      - With I(packages), return only the packages these names or globs match (e.g. C(slurmd), C(libnccl*)).
      - A node has hundreds of packages; a role that checks three should not carry the whole list through
        Ansible on every read (that list was most of a re-run's cost per read). Empty returns them all.
    type: list
    elements: str
    default: []
  queries:
    description:
      - Named queries (each a dict of the options above but offers), read together with the options above
        in this one run. The answer holds every name any of them asks for; C(query.holds) lists the names.
      - Each gets its own answer under C(parts.<name>), exactly what reading it alone returns. A play reads
        every role's query (C(<role>_node_query)) at once this way and hands each role its part as
        C(<role>_node_state), which the role uses instead of reading again.
    type: dict
    default: {}
  offers:
    description:
      - Package name to the versions wanted (a glob, e.g. C(570.172.08-*)); returns every version apt's
        sources offer for each (C(apt-cache madison), newest first) and whether one matches.
      - apt only; an empty answer elsewhere. Refresh the package indexes first.
    type: dict
    default: {}
author: gpucluster
"""

RETURN = r"""
files:
  description: path to exists, type (file, directory, link, other), mode, owner, group and (files) checksum.
  type: dict
  returned: always
texts:
  description: path to content (empty string when the file is missing).
  type: dict
  returned: always
services:
  description: >-
    unit to active (bool), enabled (bool), load (systemd LoadState) and condition_failed (bool: its last
    start was skipped because a unit condition failed, e.g. chrony in a container without CAP_SYS_TIME).
  type: dict
  returned: always
users:
  description: name to uid, gid, home, shell (only names that exist).
  type: dict
  returned: always
groups:
  description: name to gid (only names that exist).
  type: dict
  returned: always
installed:
  description: installed package names.
  type: list
  returned: when packages is true
held:
  description: package names held against upgrades (dpkg selection hold).
  type: list
  returned: when packages is true
versions:
  description: installed package name to its full version (dpkg Version, or rpm VERSION-RELEASE).
  type: dict
  returned: when packages is true
offers:
  description: package name to versions (offered, newest first), wanted (the glob) and pinned (one matches).
  type: dict
  returned: always
parts:
  description:
    - With I(queries), each query's name to its own answer (files, texts, services, users, groups, packages).
  type: dict
  returned: with queries
query:
  description:
    - The options this answer was read for, queries merged in (less offers), and holds (the queries' names).
  type: dict
  returned: always
"""


# The options above, for AnsibleModule and for the action plugin's validation.
ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "paths": {"type": "list", "elements": "str", "default": []},
    "read": {"type": "list", "elements": "str", "default": []},
    "services": {"type": "list", "elements": "str", "default": []},
    "accounts": {"type": "list", "elements": "str", "default": []},
    "packages": {"type": "bool", "default": False},
    "package_names": {"type": "list", "elements": "str", "default": []},
    "offers": {"type": "dict", "default": {}},
    "queries": {"type": "dict", "default": {}},
}
_QUERY_LISTS = ("paths", "read", "services", "accounts", "package_names")


def _file_state(path: str) -> dict[str, Any]:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}
    kinds = {stat.S_IFREG: "file", stat.S_IFDIR: "directory", stat.S_IFLNK: "link"}
    state: dict[str, Any] = {
        "exists": True,
        "type": kinds.get(stat.S_IFMT(st.st_mode), "other"),
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "owner": _name(pwd.getpwuid, st.st_uid),
        "group": _name(grp.getgrgid, st.st_gid),
    }
    if state["type"] == "file":
        with open(path, "rb") as handle:
            # sha1 because the copy module and find report sha1 (an integrity check, not security)
            state["checksum"] = hashlib.sha1(handle.read()).hexdigest()
    return state


def _name(lookup: Any, ident: int) -> str:
    try:
        return str(lookup(ident)[0])
    except KeyError:
        return str(ident)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def _expand(patterns: list[str]) -> list[str]:
    paths: list[str] = []
    for pattern in patterns:
        paths.extend(sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern])
    return paths


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return 127, ""
    return done.returncode, done.stdout


def _services(units: list[str]) -> dict[str, Any]:
    if not units:
        return {}
    properties = "--property=Id,LoadState,ActiveState,ConditionResult,ConditionTimestampMonotonic"
    rc, out = _run(["systemctl", "show", properties, "--", *units])
    if rc != 0:
        # No systemd to ask (a container without it): report every unit as not running, so the role's
        # service task runs and reports the real error itself.
        return {
            unit: {"active": False, "enabled": False, "load": "unknown", "condition_failed": False}
            for unit in units
        }
    # systemctl prints one block per unit, in the order asked, separated by a blank line.
    blocks = [_properties(block) for block in out.strip().split("\n\n")]
    # UnitFileState in `systemctl show` is what PID 1 loaded at its last daemon-reload, so it misses a
    # unit a package just enabled; `systemctl is-enabled` reads the unit files, as the service module does.
    return {
        unit: {
            "active": block.get("ActiveState") == "active",
            "enabled": _run(["systemctl", "is-enabled", "--quiet", "--", unit])[0] == 0,
            "load": block.get("LoadState", ""),
            # A unit never started also shows ConditionResult=no; only an evaluated condition has a timestamp.
            "condition_failed": block.get("ConditionResult") == "no"
            and block.get("ConditionTimestampMonotonic", "0") not in ("", "0"),
        }
        for unit, block in zip(units, blocks, strict=False)
    }


def _properties(block: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in block.splitlines() if "=" in line)
    return {key: value for key, value in pairs}


def _packages() -> tuple[list[str], list[str], dict[str, str]]:
    if shutil.which("dpkg-query"):
        _, out = _run(["dpkg-query", "--show", "--showformat=${db:Status-Abbrev} ${Package} ${Version}\\n"])
        rows = [line.split() for line in out.splitlines() if len(line.split()) == 3]
        installed = [name for status, name, _ in rows if status[1:2] == "i"]
        held = [name for status, name, _ in rows if status.startswith("h")]
        return installed, held, {name: version for status, name, version in rows if status[1:2] == "i"}
    _, out = _run(["rpm", "-qa", "--queryformat", "%{NAME} %{VERSION}-%{RELEASE}\\n"])
    versions = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    return sorted(versions), [], versions


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _offers(wanted: dict[str, str]) -> dict[str, Any]:
    if not wanted or not shutil.which("apt-cache"):
        return {}
    # One madison for every package: rows "name | version | source", newest first per package.
    _, out = _run(["apt-cache", "madison", *wanted])
    offered: dict[str, list[str]] = {name: [] for name in wanted}
    for row in out.splitlines():
        fields = [field.strip() for field in row.split("|")]
        if len(fields) >= 2 and fields[0] in offered and fields[1] not in offered[fields[0]]:
            offered[fields[0]].append(fields[1])
    return {
        name: {
            "versions": versions,
            "wanted": wanted[name],
            "pinned": any(fnmatch.fnmatchcase(v, wanted[name]) for v in versions),
        }
        for name, versions in offered.items()
    }


def merged_query(params: dict[str, Any]) -> dict[str, Any]:
    """The options with every named query's merged in: each list their union, packages if any asks."""
    queries = [params, *(params.get("queries") or {}).values()]
    merged: dict[str, Any] = {key: [] for key in _QUERY_LISTS}
    every_package = False
    for query in queries:
        for key in _QUERY_LISTS:
            merged[key] += [name for name in query.get(key) or [] if name not in merged[key]]
        if query.get("packages"):
            every_package = every_package or not query.get("package_names")
    merged["packages"] = any(query.get("packages") for query in queries)
    if every_package:
        merged["package_names"] = []  # one query wants every package: no filter
    merged["holds"] = sorted(params.get("queries") or {})
    return merged


def _read_all(params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "changed": False,
        "files": {path: _file_state(path) for path in params.get("paths") or []},
        "texts": {path: _read(path) for path in _expand(params.get("read") or [])},
        "services": _services(params.get("services") or []),
        "users": {},
        "groups": {},
        "offers": _offers(params.get("offers") or {}),
    }
    for name in params.get("accounts") or []:
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            result["users"][name] = {
                "uid": user.pw_uid,
                "gid": user.pw_gid,
                "home": user.pw_dir,
                "shell": user.pw_shell,
            }
        with contextlib.suppress(KeyError):
            result["groups"][name] = {"gid": grp.getgrnam(name).gr_gid}
    if params.get("packages"):
        installed, held, versions = _packages()
        patterns = params.get("package_names") or []
        if patterns:
            installed = [name for name in installed if _matches(name, patterns)]
            held = [name for name in held if _matches(name, patterns)]
            versions = {name: version for name, version in versions.items() if _matches(name, patterns)}
        result["installed"], result["held"], result["versions"] = installed, held, versions
    return result


def _part(whole: dict[str, Any], query: dict[str, Any]) -> dict[str, Any]:
    """The answer `query` alone would have got, cut from an answer read for a wider query."""
    reads = query.get("read") or []
    accounts = query.get("accounts") or []
    part: dict[str, Any] = {
        "files": {path: whole["files"][path] for path in query.get("paths") or []},
        "texts": {
            path: text
            for path, text in whole["texts"].items()
            if any(path == entry or fnmatch.fnmatchcase(path, entry) for entry in reads)
        },
        "services": {unit: whole["services"][unit] for unit in query.get("services") or []},
        "users": {name: user for name, user in whole["users"].items() if name in accounts},
        "groups": {name: group for name, group in whole["groups"].items() if name in accounts},
    }
    if query.get("packages"):
        patterns = query.get("package_names") or []
        part["installed"] = [name for name in whole["installed"] if not patterns or _matches(name, patterns)]
        part["held"] = [name for name in whole["held"] if not patterns or _matches(name, patterns)]
        part["versions"] = {
            name: version
            for name, version in whole["versions"].items()
            if not patterns or _matches(name, patterns)
        }
    return part


def read_state(options: dict[str, Any]) -> dict[str, Any]:
    """What the node holds for the paths, texts, services, accounts and packages asked for.

    With named queries the node is read once for all of them, and each gets its own answer under
    parts.<name>, exactly what reading it alone would have returned: a role then filters its own slice,
    not the whole play's.
    """
    queries = options.get("queries") or {}
    merged = merged_query(options)
    whole = _read_all({**merged, "offers": options.get("offers") or {}})
    result = {**_part(whole, options), "changed": False, "offers": whole["offers"]} if queries else whole
    if queries:
        result["parts"] = {name: {**_part(whole, query), "changed": False} for name, query in queries.items()}
    result["query"] = dict(merged)
    return result


def main() -> None:
    """Run as an Ansible module (AnsiballZ), when the action plugin is not in use."""
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**read_state(module.params))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--direct"]:
        # The action plugin's path: arguments as JSON in argv, the answer as JSON on stdout.
        print(json.dumps(read_state(json.loads(sys.argv[2]))))
    else:
        main()
