"""Lookup plugin: the text of a node file from gpucluster.render (the one renderer)."""

from __future__ import annotations

from pathlib import Path

from ansible.errors import AnsibleLookupError
from ansible_collections.gpucluster.cluster.plugins.plugin_utils.gpucluster_package import require_gpucluster

from ansible.plugins.lookup import LookupBase

DOCUMENTATION = r"""
    name: render
    short_description: Render a node file of a gpucluster cluster
    description:
      - Returns the text gpucluster.render produces for the on-prem target, for the given host.
      - With C(role) instead of paths, returns the node files that role writes on the host, one record per
        file of the renderer's node-file table (path, dest, owner, group, mode, block, content).
      - With C(destinations=true), returns the destination of every whole node file of the table, which a
        node image must not carry (no cluster file needed).
    options:
      _terms:
        description: Relative paths of rendered files, e.g. slurm/slurm.conf.
        required: false
      role:
        description: A role name; returns that role's node-file records instead of texts.
        required: false
      destinations:
        description: Return the table's whole-file destinations instead of texts.
        type: bool
        default: false
      cluster_file:
        description: The cluster file (the inventory sets gpucluster_cluster_file); not for destinations.
        required: false
      host:
        description: Host name; GPU nodes get their node group's files, other hosts the shared ones.
        required: false
"""


def _render(cluster_file: str, host: str) -> dict[str, str]:
    from gpucluster.clusterfile import ClusterFileError, load
    from gpucluster.clusterfile.nodes import group_of_host
    from gpucluster.render import render

    try:
        cluster = load(cluster_file).cluster
    except ClusterFileError as exc:
        raise AnsibleLookupError(str(exc)) from None
    gpu_node = group_of_host(cluster, host) is not None
    return render(cluster, "onprem", host=host if gpu_node else None, source=cluster_file)


def _rendered(cluster_file: str, host: str) -> dict[str, str]:
    """The host's files, remembered in this process and cached on disk for every forked worker."""
    require_gpucluster("gpucluster.cluster.render", AnsibleLookupError)
    from gpucluster.render.disk_cache import rendered_in_process

    return rendered_in_process(Path(cluster_file), host, lambda: _render(cluster_file, host))


class LookupModule(LookupBase):
    """`lookup('gpucluster.cluster.render', 'slurm/slurm.conf', cluster_file=…, host=…)`."""

    def run(self, terms, variables=None, **kwargs):  # type: ignore[no-untyped-def]
        """Return one text per requested path, or the role's node-file records."""
        self.set_options(var_options=variables, direct=kwargs)
        if self.get_option("destinations"):
            require_gpucluster("gpucluster.cluster.render", AnsibleLookupError)
            from gpucluster.render.node_files import node_file_destinations

            return node_file_destinations()
        cluster_file = self.get_option("cluster_file")
        if not cluster_file or not self.get_option("host"):
            raise AnsibleLookupError("render needs cluster_file and host, or destinations=true")
        files = _rendered(cluster_file, self.get_option("host"))
        if self.get_option("role"):
            from gpucluster.render.node_files import role_records

            return role_records(self.get_option("role"), files)
        missing = [t for t in terms if t not in files]
        if missing:
            raise AnsibleLookupError(
                f"not rendered for this host: {', '.join(missing)}; have {sorted(files)}"
            )
        return [files[t] for t in terms]
