"""The cluster file for a booted test rack (same schema as clusters/*.yaml)."""

from __future__ import annotations

from typing import Any


def rack_cluster_file(rack: str, hosts: list[tuple[str, str]], gpus_per_node: int) -> dict[str, Any]:
    """First host is controller and accounting; the rest form rack `rack-<name>` of compute nodes."""
    (controller, controller_address), *computes = hosts
    return {
        "apiVersion": "gpucluster/v1",
        "kind": "Cluster",
        "name": f"testrack{rack}",
        # Debian 12's own Slurm runs on the test rack. The driver pin is the one the recorded healthy node ran
        # (tests/accept/samples/healthy), so acceptance with those probes sees the pinned driver.
        "versions": {"slurm": "22.05.8", "nvidia_driver_branch": "570", "nvidia_driver": "570.172.08"},
        "slurm": {
            "controller": controller,
            "accounting": {"enabled": True},
            "partitions": [{"name": "debug", "node_groups": [f"rack-{rack}"], "default": True}],
            # cgroup plugins cannot work inside nspawn on this kernel (v1 controllers are read-only,
            # pure cgroup2 is refused as hybrid): the production default stays cgroup-based.
            "plugins": {
                "proctrack": "proctrack/linuxproc",
                "task": "task/none",
                "jobacct_gather": "jobacct_gather/linux",
            },
        },
        # Prometheus and node exporter cost every rack a few dozen packages and a scraping daemon: only the
        # pins rack (tests/rack/test_nvidia_pins.py), whose nodes serve the DCGM exporter mimic, has them.
        "monitoring": {"enabled": False},
        # The health checks would drain every node whose GPU tools do not answer (no GPUs here): only the
        # e2e rack turns them on, with the healthy probes installed (tests/rack/test_e2e.py).
        "health": {"enabled": False},
        "onprem": {
            "management_cidr": "10.77.0.0/24",
            # chrony cannot set the clock inside nspawn (its unit's ConditionCapability=CAP_SYS_TIME
            # keeps it stopped), so these sources are written but never asked.
            "time_servers": [controller_address],
            "profiles": {
                "testnode": {
                    "gpus": {"model": "h100-sxm", "count": gpus_per_node},
                    "nvswitch": False,
                    # Declared like a real rack's HCAs so acceptance has InfiniBand checks to fail.
                    "hcas": {"count": 8, "fabric": "ib-ndr400"},
                    "cpus": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
                    "memory_gib": 1,
                    # No GPUs or HCAs behind the declared devices: install user space only, and
                    # acceptance must fail every hardware check.
                    "install_mode": "userspace",
                }
            },
            "service_hosts": [
                {"name": controller, "address": controller_address, "roles": ["controller", "accounting"]}
            ],
            "racks": [
                {
                    "name": f"rack-{rack}",
                    "profile": "testnode",
                    "nodes": [{"name": name, "address": address} for name, address in computes],
                }
            ],
        },
    }
