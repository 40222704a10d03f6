"""Ansible inventory plugin: a gpucluster cluster file is an inventory (read by gpucluster.clusterfile)."""

from __future__ import annotations

import re
from pathlib import Path

from ansible.errors import AnsibleParserError
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.gpucluster_package import require_gpucluster

from ansible.plugins.inventory import BaseInventoryPlugin

DOCUMENTATION = r"""
    name: cluster_file
    short_description: Hosts, groups and role variables from a gpucluster cluster file
    description:
      - "Recognises a YAML file with C(apiVersion: gpucluster/v1) and C(kind: Cluster)."
      - "Loads it through gpucluster.clusterfile (the project's only reader) and yields the on-prem hosts with
        C(ansible_host), groups per site, rack, hardware profile and Slurm role, and the role variables."
"""

_MARKERS = (
    re.compile(r"^apiVersion:\s*['\"]?gpucluster/v1", re.M),
    re.compile(r"^kind:\s*['\"]?Cluster", re.M),
)


class InventoryModule(BaseInventoryPlugin):
    """Turns a cluster file into hosts and groups."""

    NAME = "gpucluster.cluster.cluster_file"

    def verify_file(self, path: str) -> bool:
        """Claim YAML files whose head says apiVersion gpucluster/v1 and kind Cluster."""
        if not super().verify_file(path) or not path.endswith((".yaml", ".yml")):
            return False
        try:
            head = Path(path).read_text(encoding="utf-8")[:4096]
        except OSError:
            return False
        return all(marker.search(head) for marker in _MARKERS)

    def parse(self, inventory, loader, path, cache=True):  # type: ignore[no-untyped-def]
        """Load the cluster and add its hosts, groups and variables."""
        super().parse(inventory, loader, path, cache)
        require_gpucluster(self.NAME, AnsibleParserError)
        from gpucluster.ansible_vars import inventory as cluster_inventory
        from gpucluster.clusterfile import ClusterFileError, load

        try:
            loaded = load(path)
        except ClusterFileError as exc:
            raise AnsibleParserError(str(exc)) from None
        result = cluster_inventory(loaded.cluster, str(Path(path).resolve()))
        for host, variables in result.hosts.items():
            self.inventory.add_host(host)
            for key, value in variables.items():
                self.inventory.set_variable(host, key, value)
        for group, members in result.groups.items():
            self.inventory.add_group(group)
            for host in members:
                self.inventory.add_child(group, host)
