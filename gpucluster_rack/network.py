"""Network namespaces of a test rack: one bridge namespace, one namespace per node, veths between."""

from __future__ import annotations

from pathlib import Path

from gpucluster_rack.sh import run

SUBNET_PREFIX = "10.77.0"
BRIDGE_ADDRESS = f"{SUBNET_PREFIX}.1"


def bridge_ns(rack: str) -> str:
    """Name of the namespace that holds the bridge (Ansible and ssh run inside it)."""
    return f"gcr-{rack}-br"


def node_ns(rack: str, node: str) -> str:
    """Name of a node's own network namespace."""
    return f"gcr-{rack}-{node}"


def node_address(index: int) -> str:
    """Address of the index-th node (0-based) on the rack bridge."""
    return f"{SUBNET_PREFIX}.{11 + index}"


def create_bridge(rack: str) -> None:
    """Bridge namespace with br0 at BRIDGE_ADDRESS/24; the host namespace gets no interface."""
    ns = bridge_ns(rack)
    run(["ip", "netns", "add", ns])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    run(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"])
    run(["ip", "-n", ns, "addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", "br0"])
    run(["ip", "-n", ns, "link", "set", "br0", "up"])


def create_node_ns(rack: str, node: str, index: int) -> None:
    """A node namespace with eth0 (address on the bridge) plugged into br0; no default route."""
    ns, br = node_ns(rack, node), bridge_ns(rack)
    run(["ip", "netns", "add", ns])
    peer = f"v{index}"
    run(["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", br])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    run(["ip", "-n", ns, "addr", "add", f"{node_address(index)}/24", "dev", "eth0"])
    run(["ip", "-n", ns, "link", "set", "eth0", "up"])
    run(["ip", "-n", br, "link", "set", peer, "master", "br0"])
    run(["ip", "-n", br, "link", "set", peer, "up"])


def delete_ns(name: str) -> None:
    """Delete a namespace if it exists (its veth ends go with it)."""
    if Path(f"/run/netns/{name}").exists():
        run(["ip", "netns", "del", name], check=False)


def rack_namespaces(rack: str) -> list[str]:
    """Every namespace of the rack that exists now."""
    root = Path("/run/netns")
    return sorted(p.name for p in root.glob(f"gcr-{rack}-*")) if root.exists() else []
