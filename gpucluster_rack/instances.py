"""The instance runner: every running instance of the emulated EC2 boots as an nspawn node on the rack.

It watches the emulated account. For each new pending or running instance of the cluster it boots a
node from the cloud node image with the instance's own user data (what the launch template carried,
exactly as synthesized) as a NoCloud seed, a metadata service of its own at 169.254.169.254, and a fresh
clock; when the instance leaves running (terminated by the programs, or out of band) it powers the node
off at once, as EC2 does. Facts behind each step: ../shared/notes/cloud-node-facts.md.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from gpucluster_rack import emulated_aws
from gpucluster_rack.cloud_image import CloudImage
from gpucluster_rack.imds import MetadataService
from gpucluster_rack.network import create_node_ns, delete_ns, node_address, node_ns
from gpucluster_rack.node import Node, boot, cleanup_mounts_and_cgroups, personalise
from gpucluster_rack.proxy import apt_proxy_url, spawn
from gpucluster_rack.rack import Rack, terminate
from gpucluster_rack.sh import progress, run

BOOT_DELAY_S = 2.5  # from the runner first seeing an instance to its nspawn start
FIRST_SLOT = 89  # node_address(89) = 10.77.0.100: instances get .100 upwards
SLOTS = 100  # .100-.199, used in turn
IMDS_ADDRESS = "169.254.169.254"
# The emulated platform, not the image: cloud-init reads the seed (no EC2 datasource in a container), and
# three of its modules need a real console, network renderer or locale data a container lacks.
CLOUD_CFG = """\
datasource_list: [NoCloud, None]
network: {config: disabled}
ssh: {emit_keys_to_console: false}
locale: false
"""


@dataclass
class Running:
    """One instance booted as a node."""

    instance_id: str
    node: Node
    pid: int
    socat: int
    booted_at: float  # time.time() when nspawn started


@dataclass
class InstanceRunner:
    """Boots and stops nspawn nodes as the emulated EC2's instances come and go."""

    rack: Rack
    image: CloudImage
    cluster: str
    imds: MetadataService
    public_key: str
    gpus: int
    running: dict[str, Running] = field(default_factory=dict)
    events: list[tuple[float, str, str]] = field(default_factory=list)  # (time, instance, boot|halt)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seen: dict[str, float] = field(default_factory=dict)  # instance id → when the runner first saw it
    _next_slot: int = 0

    def __post_init__(self) -> None:
        self.ec2: Any = emulated_aws.client(self.rack.name, "ec2")

    def start(self) -> None:
        """Watch the account in a background thread."""
        self._thread = threading.Thread(target=self._loop, name="instance-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and power every node off."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for instance_id in list(self.running):
            self._halt(instance_id)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as error:  # a test reads the errors; the loop must go on
                self.errors.append(repr(error))
            self._stop.wait(0.5)

    def sync(self) -> None:
        """Boot nodes for new instances, halt nodes whose instance left running."""
        live: dict[str, dict[str, Any]] = {}
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:gpucluster:cluster", "Values": [self.cluster]}]
        )
        for page in pages:
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    if instance["State"]["Name"] in ("pending", "running"):
                        live[instance["InstanceId"]] = instance
        now = time.time()
        for instance_id in live:
            self._seen.setdefault(instance_id, now)
        with self._lock:
            for instance_id in [i for i in self.running if i not in live]:
                self._halt(instance_id)
            for instance_id, instance in live.items():
                if instance_id not in self.running:
                    self._boot(instance)

    def node_of(self, instance_id: str) -> Node:
        """The node an instance runs as."""
        return self.running[instance_id].node

    def _boot(self, instance: dict[str, Any]) -> None:
        instance_id = instance["InstanceId"]
        # A fresh slot every time: a halted instance's namespace and veth go away asynchronously.
        index = FIRST_SLOT + self._next_slot % SLOTS
        self._next_slot += 1
        name = f"i{index}"
        node = Node(self.rack.name, name, node_address(index), self.rack.state / "nodes" / name)
        create_node_ns(self.rack.name, name, index)
        namespace = node_ns(self.rack.name, name)
        run(["ip", "-n", namespace, "addr", "add", f"{IMDS_ADDRESS}/32", "dev", "lo"])
        zone = instance.get("Placement", {}).get("AvailabilityZone", f"{emulated_aws.REGION}a")
        socket = self.imds.serve(instance_id, zone)
        socat = spawn(
            [
                "ip", "netns", "exec", namespace, "socat",
                f"TCP-LISTEN:80,bind={IMDS_ADDRESS},fork,reuseaddr", f"UNIX-CONNECT:{socket}",
            ],
            self.rack.state / f"socat-imds-{instance_id}.out",
        )  # fmt: skip
        self._mount(node)
        personalise(node, self.public_key, apt_proxy_url(), self.gpus)
        self._seed(node, instance_id)
        # slurmctld ignores a resumed node whose boot time (now - uptime, whole seconds) is not after the
        # resume request, and a fresh clock starts at up to a second: wait out the rounding. An EC2
        # instance takes far longer than this to boot.
        time.sleep(max(0.0, self._seen[instance_id] + BOOT_DELAY_S - time.time()))
        # An instance's root may change its own firewall (the join limits the metadata service to root).
        pid = boot(node, fresh_clock=True, capabilities=("CAP_NET_ADMIN",))
        self.running[instance_id] = Running(instance_id, node, pid, socat, time.time())
        self.events.append((time.time(), instance_id, "boot"))
        self.rack.pids[name] = pid
        self.rack.pids[f"proxy-imds-{name}"] = socat
        self.rack.save()
        progress(f"instance {instance_id} boots as {name} ({node.address})")

    def _mount(self, node: Node) -> None:
        # Every instance gets a fresh disk: nothing of an earlier instance in the same slot survives.
        shutil.rmtree(node.state, ignore_errors=True)
        for sub in ("upper", "work", "root"):
            (node.state / sub).mkdir(parents=True, exist_ok=True)
        upper, work = node.state / "upper", node.state / "work"
        options = f"lowerdir={self.image.lowerdir()},upperdir={upper},workdir={work}"
        run(["mount", "-t", "overlay", "overlay", "-o", options, str(node.root)])

    def _seed(self, node: Node, instance_id: str) -> None:
        answer = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        user_data = base64.b64decode(answer.get("UserData", {}).get("Value", "")).decode()
        seed = node.root / "var/lib/cloud/seed/nocloud"
        seed.mkdir(parents=True, exist_ok=True)
        (seed / "user-data").write_text(user_data)
        (seed / "meta-data").write_text(f"instance-id: {instance_id}\nlocal-hostname: {node.name}\n")
        (node.root / "etc/cloud/cloud.cfg.d/99-test-rack.cfg").write_text(CLOUD_CFG)
        # Where the node's AWS CLI finds the emulated account (on AWS this file does not exist).
        (node.root / "etc/gpucluster").mkdir(parents=True, exist_ok=True)
        (node.root / "etc/gpucluster/aws.env").write_text(f"AWS_ENDPOINT_URL={emulated_aws.ENDPOINT}\n")

    def _halt(self, instance_id: str) -> None:
        entry = self.running.pop(instance_id)
        # EC2 powers a terminated instance off; no clean shutdown is owed to the node.
        terminate(entry.pid, timeout_s=3)
        cleanup_mounts_and_cgroups(entry.node)
        shutil.rmtree(entry.node.state, ignore_errors=True)
        terminate(entry.socat, timeout_s=3)
        delete_ns(node_ns(self.rack.name, entry.node.name))
        self.imds.stop(instance_id)
        with contextlib.suppress(KeyError):
            del self.rack.pids[entry.node.name]
            del self.rack.pids[f"proxy-imds-{entry.node.name}"]
        self.rack.save()
        self.events.append((time.time(), instance_id, "halt"))
        progress(f"instance {instance_id} ({entry.node.name}) is gone")
