"""Filters over a gpucluster_node_state result: does the node already hold what a task would write?

Builtin modules that change a node cost a module run each even when nothing changes (`copy` costs two:
a remote stat, then `file`). A role reads its files, packages and services once with the
gpucluster_node_state module; these filters tell each task whether it has anything to do, so a re-run
of a converged rack runs one module per role and only the tasks (and handlers) of what differs.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any


def state_current(
    state: dict[str, Any],
    path: str,
    content: str | None = None,
    *,
    kind: str = "file",
    mode: str = "0644",
    owner: str = "root",
    group: str = "root",
) -> bool:
    """True when the node state holds path as this kind, mode, owner, group (and content, when given)."""
    files = state.get("files", {}) if isinstance(state, dict) else {}
    entry = files.get(path, {})
    if not entry.get("exists"):
        return False
    # sha1 as copy and the module report it (an integrity check here, not a security control)
    content_ok = content is None or entry.get("checksum") == hashlib.sha1(content.encode("utf-8")).hexdigest()
    attributes = (entry.get("type"), entry.get("mode"), entry.get("owner"), entry.get("group"))
    return content_ok and attributes == (kind, mode, owner, group)


def service_current(state: dict[str, Any], unit: str) -> bool:
    """True when the node state shows unit active and enabled (nothing for `state: started, enabled`)."""
    services = state.get("services", {}) if isinstance(state, dict) else {}
    entry = services.get(unit, {})
    return bool(entry.get("active") and entry.get("enabled"))


def packages_missing(state: dict[str, Any], wanted: list[str]) -> list[str]:
    """The wanted packages the node state does not list as installed."""
    installed = set(state.get("installed", [])) if isinstance(state, dict) else set()
    return [name for name in wanted if name not in installed]


def packages_unheld(state: dict[str, Any], wanted: list[str]) -> list[str]:
    """The wanted packages the node state does not list as held."""
    held = set(state.get("held", [])) if isinstance(state, dict) else set()
    return [name for name in wanted if name not in held]


def packages_off_version(state: dict[str, Any], wanted: list[str], version: str) -> list[str]:
    """The wanted packages missing or installed at another release than version (dpkg's or rpm's form)."""
    versions = state.get("versions", {}) if isinstance(state, dict) else {}
    release = re.compile(rf"^([0-9]+:)?{re.escape(version)}([-.]|$)")
    return [name for name in wanted if not release.match(str(versions.get(name, "")))]


def block_present(state: dict[str, Any], path: str, marker: str, block: str) -> bool:
    """True when the node's text of path holds block between the markers, as blockinfile writes it."""
    texts = state.get("texts", {}) if isinstance(state, dict) else {}
    written = "\n".join(
        [marker.replace("{mark}", "BEGIN"), *block.splitlines(), marker.replace("{mark}", "END"), ""]
    )
    return written in (texts.get(path) or "")


def accounts_differ(state: dict[str, Any], accounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The accounts whose user or same-named group the node lacks or holds with other ids (home, shell).

    Each account names `name` and `uid` and `gid` (or one `id` for both); `home` and `shell` are compared
    only when given.
    """
    users = state.get("users", {}) if isinstance(state, dict) else {}
    groups = state.get("groups", {}) if isinstance(state, dict) else {}
    differ = []
    for account in accounts:
        uid = int(account.get("uid", account.get("id", -1)))
        gid = int(account.get("gid", account.get("id", -1)))
        user, group = users.get(account["name"], {}), groups.get(account["name"], {})
        wanted = {"uid": uid, "gid": gid}
        wanted.update({key: account[key] for key in ("home", "shell") if key in account})
        if group.get("gid") != gid or any(user.get(key) != value for key, value in wanted.items()):
            differ.append(account)
    return differ


def paths_differ(state: dict[str, Any], paths: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries state_current finds off: (dest or path) and optionally content, kind, mode, owner, group.

    A renderer node-file record names its node path `dest` beside its template `path`; other entries `path`.
    """
    options = ("kind", "mode", "owner", "group")
    return [
        entry
        for entry in paths
        if not state_current(
            state,
            entry.get("dest") or entry["path"],
            entry.get("content"),
            **{key: entry[key] for key in options if key in entry},
        )
    ]


def not_offered(state: dict[str, Any]) -> list[list[str]]:
    """[package, newest offered version (or 'nothing'), wanted glob] for each offer read without a match."""
    offers = state.get("offers", {}) if isinstance(state, dict) else {}
    return [
        [name, (offer.get("versions") or ["nothing"])[0], offer.get("wanted", "")]
        for name, offer in offers.items()
        if not offer.get("pinned")
    ]


class FilterModule:
    """The node-state filters: what is current, missing, unheld, different or not offered."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {
            "state_current": state_current,
            "block_present": block_present,
            "service_current": service_current,
            "packages_missing": packages_missing,
            "packages_unheld": packages_unheld,
            "packages_off_version": packages_off_version,
            "not_offered": not_offered,
            "accounts_differ": accounts_differ,
            "paths_differ": paths_differ,
        }
