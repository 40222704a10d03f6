"""A burst rack: a rack converged from a hybrid cluster file against an emulated AWS, and cloud instances.

Used by tests/rack/test_burst.py and `make demo`. ctl (controller) and n1 (a rack node) converge from a
cluster file with two cloud groups (p5-spot and p5-od, two nodes each); n2, not in the cluster file,
builds the cloud node image with the image playbook (Slurm, munge, slurmd and the boot prerequisites:
the GPU roles have their own rack test, test_nvidia_pins.py). The emulated account (moto,
gpucluster_rack/emulated_aws.py) holds the Capacity stack as synthesized
(gpucluster_rack/emulated_deploy.py); the instance runner boots every instance as an nspawn node with
its user data and a metadata service of its own (gpucluster_rack/instances.py, gpucluster_rack/imds.py).
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpucluster.ansible_vars import image_vars
from gpucluster.clusterfile import load
from gpucluster_rack import ROOT, cloud_image, emulated_aws
from gpucluster_rack.emulated_deploy import Deployer, synth_capacity
from gpucluster_rack.imds import MetadataService
from gpucluster_rack.instances import InstanceRunner
from gpucluster_rack.playbook import Playbook, converge
from gpucluster_rack.rack import Rack, down
from gpucluster_rack.rack_cluster import rack_cluster_file
from gpucluster_rack.sh import progress, run

RACK = "c"
IMAGE_NODE = "n2"
# One image per rack: `make demo`'s burst rack and the tests' rack may build theirs at the same time, and each
# rack's instances boot from its own image's layer while the other replaces its own.
IMAGES = Path("/var/lib/gpucluster-rack-images")
USER = "alice"
IDLE_S = 60  # idle_minutes: 1, the shortest the cluster file allows
GROUPS = ("p5-spot", "p5-od")
# A group of mixed GPU models (p5 H100 or p5e H200) with one instance in all: p5-mix-1, p5-mix-h200-1.
MIXED = "p5-mix"
BUCKET = "testrackc-checkpoints"  # the Checkpoints stack's bucket, made versioned in the emulated S3
CHECKPOINT_INTERVAL_S = 10  # Young: sqrt(2 x 1 s write x 50 s between interruptions)
ROUTING_CAP = 1  # the experiment class's max_cloud_nodes
ROUTING_INTERVAL_S = 10  # a pass of the burst controller every 10 s, the shortest the cluster file allows


@dataclass
class Burst:
    """The converged rack, the emulated account and the instance runner."""

    rack: Rack
    first: Playbook
    second: Playbook | None  # None where the caller did not ask for the idempotence run
    image_build: Playbook
    runner: InstanceRunner
    imds: MetadataService
    ec2: Any
    injector: emulated_aws.FaultInjector


def _cluster_file(rack: Rack) -> dict[str, Any]:
    cluster = rack_cluster_file(rack.name, [(rack.node(i).name, rack.node(i).address) for i in range(2)], 8)
    slurm = cluster["slurm"]
    slurm["accounting"] = {"enabled": False}
    slurm["partitions"] = [
        {"name": "debug", "node_groups": [f"rack-{rack.name}"], "default": True},
        {"name": "cloud", "node_groups": list(GROUPS)},
        {"name": "spot", "node_groups": ["p5-spot"]},
        {"name": "mixed", "node_groups": [MIXED]},
        {"name": "od", "node_groups": ["p5-od"]},
    ]
    slurm["users"] = {"accounts": [{"name": USER, "uid": 2001}]}
    # Emulated p5 nodes are 2-core containers: register them as declared (test racks only).
    slurm["slurmd_parameters"] = ["config_overrides"]
    # Requeued jobs (capacity errors, lost instances, spot notices) wait 30 s here, not 120 s.
    slurm["credential_lifetime_s"] = 30
    cluster["aws"] = {
        "region": emulated_aws.REGION,
        "availability_zone": f"{emulated_aws.REGION}a",
        "vpc_cidr": "10.100.0.0/16",
        "onprem_cidrs": ["10.77.0.0/24"],
        "vpn": {"customer_gateway_address": "203.0.113.10", "bgp_asn": 65010},
        "controller_access": {
            "acm_pca_arn": "arn:aws:acm-pca:us-east-1:111122223333:certificate-authority/"
            "0b5f4a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b"
        },
        "capacity": [
            {
                "name": name,
                "instance_type": "p5.48xlarge",
                "market": "spot" if name == "p5-spot" else "on-demand",
                "max_count": 2,
                "idle_minutes": IDLE_S // 60,
                "resume_timeout_s": 240,
            }
            for name in GROUPS
        ]
        + [
            {
                "name": MIXED,
                "instance_type": "p5.48xlarge",
                "fallback_instance_types": ["p5e.48xlarge"],
                "mixed_gpus": True,
                "max_count": 1,
                "idle_minutes": IDLE_S // 60,
                "resume_timeout_s": 240,
            }
        ],
        "burst": {"unavailable_minutes": 2, "reconcile_seconds": 10},
        "checkpoint": {"prefix": "checkpoints", "encryption": "s3"},
    }
    # A spot job here is interrupted every 50 s and writes its checkpoint in 1 s: a 10 s interval. An
    # emulated cloud node registers within a minute.
    cluster["economics"] = {
        "spot_interruptions_per_day": 86400 / 50,
        "checkpoint_write_s": 1,
        "cloud_boot_minutes": 1,
    }
    # Hybrid routing with the field guides' policy scaled down: experiments burst after a minute, at most
    # ROUTING_CAP cloud node; classes by comment tag only, so the other tests' jobs stay as submitted.
    cluster["routing"] = {
        "classes": [
            {"name": "training", "route": "rack"},
            {
                "name": "experiment",
                "route": "rack_then_cloud",
                "after_wait_minutes": 1,
                "max_cloud_nodes": ROUTING_CAP,
            },
            {"name": "eval", "route": "spot"},
        ],
        "partitions": {"rack": "debug", "cloud": "od", "spot": "spot"},
        "interval_s": ROUTING_INTERVAL_S,
    }
    return cluster


def _wheelhouse(target: Path) -> Path:
    """The gpucluster wheel and its pinned dependencies, for the controller's offline install."""
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line]
    wanted = [p for p in pins if p.split("==")[0].lower() in {"pydantic", "pyyaml", "jinja2", "boto3"}]
    run([str(ROOT / ".venv/bin/pip"), "wheel", "-q", "--no-deps", "-w", str(target), str(ROOT)], timeout=300)
    run([str(ROOT / ".venv/bin/pip"), "download", "-q", "-d", str(target), *wanted], timeout=600)
    return target


def _write_ansible_vars(rack: Rack) -> None:
    (rack.state / "group_vars").mkdir(exist_ok=True)
    variables = {
        "slurm_controller_power_wheelhouse": str(_wheelhouse(rack.state / "wheelhouse")),
        # What a rack controller's credential_process would yield, at the emulated endpoint.
        "slurm_controller_aws_config": {
            "region": emulated_aws.REGION,
            "endpoint_url": emulated_aws.ENDPOINT,
            **emulated_aws.CREDENTIALS,
        },
    }
    (rack.state / "group_vars" / "all.yml").write_text(yaml.safe_dump(variables))


def _build_image(rack: Rack) -> Playbook:
    """The image playbook on n2 (Slurm, munge and boot prerequisites), as EC2 Image Builder runs it."""
    variables = image_vars(load(rack.cluster_file).cluster)
    tags = ("--tags", "slurm_common,slurm_node,node_image")
    return Playbook(*cloud_image.build(rack, IMAGE_NODE, dict(variables), *tags))


@contextlib.contextmanager
def burst_rack(name: str = RACK, *, rerun: bool = True) -> Iterator[Burst]:
    """The rack converged against the emulated account, the image built, the instance runner started.

    rerun: converge a second time (the tests check it changes nothing; the demo does not show it).
    """
    rack = Rack(name=name, size=3, declared=2)
    runner: InstanceRunner | None = None
    imds: MetadataService | None = None
    injector: emulated_aws.FaultInjector | None = None
    try:
        rack.up()
        rack.cluster_file.write_text(yaml.safe_dump(_cluster_file(rack), sort_keys=False))
        cluster = load(rack.cluster_file).cluster
        moto, injector = emulated_aws.start(rack.state, rack.name)
        rack.pids.update({f"proxy-moto{i}": pid for i, pid in enumerate(moto)})
        rack.save()
        ec2, ssm = emulated_aws.client(rack.name, "ec2"), emulated_aws.client(rack.name, "ssm")
        template = synth_capacity(cluster, str(rack.cluster_file), rack.state / "cdk.out")
        zone = f"{emulated_aws.REGION}a"
        Deployer(
            ec2,
            ssm,
            vpc_cidr="10.100.0.0/16",
            subnet_cidr="10.100.0.0/17",
            zone=zone,
            more=lambda service: emulated_aws.client(rack.name, service),
            bucket=BUCKET,
        ).deploy(template)
        progress(f"rack {rack.name}: building the cloud node image on n2")
        image_build = _build_image(rack)
        assert image_build.rc == 0, image_build.output[-4000:]
        rack.stop_node(IMAGE_NODE)
        image = cloud_image.save(rack.node(2), image_vars(cluster), IMAGES / f"burst-node-{rack.name}")
        _write_ansible_vars(rack)
        progress(f"rack {rack.name}: converging ctl and n1")
        first = converge(rack)
        second = converge(rack) if rerun and first.rc == 0 else None
        # n1 registered drained, awaiting acceptance (tests/rack/test_e2e.py runs that)
        if first.rc == 0 and (second is None or second.rc == 0):
            rack.ssh("ctl", "scontrol update nodename=n1 state=RESUME")
        imds = MetadataService(rack.state / "imds", ec2)
        runner = InstanceRunner(
            rack, image, cluster.name, imds, (rack.state / "id_ed25519.pub").read_text(), gpus=8
        )
        runner.start()
        yield Burst(rack, first, second, image_build, runner, imds, ec2, injector)
    finally:
        if injector is not None:
            injector.shutdown()
        if runner is not None:
            runner.stop()
        if imds is not None:
            imds.close()
        down(rack.name)


def put_train_script(burst: Burst) -> str:
    """The reference job (examples/spot_training/train.py) in the job user's home on the controller."""
    script = base64.b64encode((ROOT / "examples" / "spot_training" / "train.py").read_bytes()).decode()
    path = f"/home/{USER}/train.py"
    burst.rack.ssh("ctl", f"echo {script} | base64 -d > {path} && chown {USER} {path} && chmod 0755 {path}")
    return path


def checkpoint_record(burst: Burst, job: str, name: str) -> dict[str, Any] | None:
    """A JSON record the reference job wrote beside its checkpoints (None: not written)."""
    s3 = emulated_aws.client(burst.rack.name, "s3")
    try:
        body = s3.get_object(Bucket=BUCKET, Key=f"checkpoints/{USER}/{job}/{name}")["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    data: dict[str, Any] = json.loads(body)
    return data


def complete_checkpoints(burst: Burst, job: str) -> list[int]:
    """The steps of a job's checkpoints that have their completion marker."""
    s3 = emulated_aws.client(burst.rack.name, "s3")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"checkpoints/{USER}/{job}/step-")
    return sorted(
        int(o["Key"].split("/")[-2][5:]) for o in listed.get("Contents", []) if o["Key"].endswith("/COMPLETE")
    )


def node_tag(burst: Burst, instance_id: str) -> str:
    """The Slurm node name an emulated instance was launched for (its node tag)."""
    tags = burst.ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [instance_id]}])["Tags"]
    return next((str(t["Value"]) for t in tags if t["Key"] == "gpucluster:node"), "")
