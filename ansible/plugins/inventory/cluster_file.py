"""Ansible inventory plugin: a gpucluster cluster file is an inventory (read by gpucluster.clusterfile)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ansible.errors import AnsibleParserError
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.gpucluster_package import require_gpucluster

from ansible.plugins.inventory import BaseInventoryPlugin

DOCUMENTATION = r"""
    name: cluster_file
    short_description: Hosts, groups and role variables from a gpucluster cluster file
    description:
      - "Recognises a YAML file whose first 4 kB say C(apiVersion: gpucluster/...), or C(kind: Cluster) and no
        other apiVersion."
      - "Loads it through gpucluster.clusterfile (the project's only reader) and yields the on-prem hosts with
        C(ansible_host), groups per site, rack, hardware profile and Slurm role, and the role variables."
      - "A file that says it is a cluster file (either marker, even misspelt or misplaced) and cannot be
        loaded ends the run with exit status 2 and one C(FILE:LINE: path: problem; hint) line per problem,
        the messages of C(gpucluster validate)."
"""

# A marker claims the file also when the rest is wrong (apiVersion gpucluster/v2, kind Clusters, a list
# at the top): such a file is a cluster file with a mistake, which only this plugin can explain. `kind:
# Cluster` alone counts only without another apiVersion (a kind or Cluster API file is not ours).
_API_VERSION = re.compile(r"^[ \t-]*apiVersion:\s*['\"]?gpucluster/", re.M)
_ANY_API_VERSION = re.compile(r"^[ \t-]*apiVersion:", re.M)
_KIND = re.compile(r"^[ \t-]*kind:\s*['\"]?Cluster", re.M)


class InventoryModule(BaseInventoryPlugin):
    """Turns a cluster file into hosts and groups."""

    NAME = "gpucluster.cluster.cluster_file"

    def verify_file(self, path: str) -> bool:
        """Claim YAML files whose head says apiVersion gpucluster/… or kind Cluster."""
        if not super().verify_file(path) or not path.endswith((".yaml", ".yml")):
            return False
        try:
            with Path(path).open("rb") as stream:  # the head only: the file may be huge or not text
                head = stream.read(4096).decode("utf-8", errors="replace")
        except OSError:
            return False
        if _API_VERSION.search(head):
            return True
        return bool(_KIND.search(head)) and not _ANY_API_VERSION.search(head)

    def parse(self, inventory, loader, path, cache=True):  # type: ignore[no-untyped-def]
        """Load the cluster and add its hosts, groups and variables."""
        super().parse(inventory, loader, path, cache)
        require_gpucluster(self.NAME, AnsibleParserError)
        from gpucluster.ansible_vars import inventory as cluster_inventory
        from gpucluster.clusterfile import ClusterFileError, load

        try:
            loaded = load(path)
        except ClusterFileError as exc:
            # Ansible would show a failed source once per enabled plugin, each message twice, and exit 1.
            # The file is a cluster file (verify_file), so no other plugin can read it: say what to fix,
            # once per problem, and exit 2 like every other front door of the cluster file.
            print(exc, file=sys.stderr)
            raise SystemExit(2) from None
        result = cluster_inventory(loaded.cluster, str(Path(path).resolve()))
        _import_for_the_workers()
        for host, variables in result.hosts.items():
            self.inventory.add_host(host)
            for key, value in variables.items():
                self.inventory.set_variable(host, key, value)
        for group, members in result.groups.items():
            self.inventory.add_group(group)
            for host in members:
                self.inventory.add_child(group, host)


def _import_for_the_workers() -> None:
    """Import the renderer in ansible-playbook's own process, which parses the inventory.

    Ansible forks a fresh worker per host and task; every task that reads a role's node files runs the
    gpucluster.cluster.render lookup, which would otherwise import the renderer (jinja2, the cluster file
    model) in each worker, about a twentieth of a 16-node re-run's Ansible CPU. A forked worker inherits them.
    """
    import gpucluster.render.disk_cache
    import gpucluster.render.node_files  # noqa: F401
