"""Filter: which of a role's node files differ on a node, and what each change needs there.

The decision comes from gpucluster.render.node_files, the table the review reads too, so the handlers a
converge notifies are the actions `gpucluster review` predicted for the same change.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.gpucluster.cluster.plugins.filter.node_state_filters import state_current
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.gpucluster_package import require_gpucluster


def node_file_changes(
    records: list[dict[str, Any]], state: dict[str, Any], host: str, slurm_version: str
) -> list[dict[str, Any]]:
    """The records (from the render lookup with role=) a node does not hold, each with its `actions`."""
    require_gpucluster("gpucluster.cluster.node_file_changes", AnsibleFilterError)
    from gpucluster.render.node_files import Change, actions_of

    out = []
    for record in records:
        dest, content = record["dest"], record["content"]
        if record["block"] or state_current(
            state, dest, content, mode=record["mode"], owner=record["owner"], group=record["group"]
        ):
            continue
        exists = state.get("files", {}).get(dest, {}).get("exists", False)
        old = state.get("texts", {}).get(dest) if exists else None
        actions = actions_of([(record["path"], Change(old, content, host, slurm_version))])
        out.append({**record, "actions": actions})
    return out


class FilterModule:
    """gpucluster.cluster.node_file_changes."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"node_file_changes": node_file_changes}
