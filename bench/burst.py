"""Burst timings: the ResumeProgram against moto for 1-500 nodes, then (with --rack) submit → running.

Part one, the program's own share: read the capacity parameter, one instant EC2 Fleet call per job and
group, one tag call per instance, return without waiting for boot. Against the pinned moto server on
loopback (HTTP, as the controller reaches AWS) with the example cluster's Capacity stack as synthesized,
its spot group widened to 500 nodes; the median of three runs per size and the ratio to the 1-node run
(target: ≤ 2 s for 64 nodes).

Part two (--rack, root and `make rack-deps`, about ten minutes): the burst rack of
gpucluster_rack/burst_rack.py; a 1-node and a 4-node job (two groups), each split into submit → ResumeProgram
start (slurmctld), ResumeProgram wall time (its log), ResumeProgram start → last instance booting (the
emulated EC2 and the runner's 2.5 s start delay), instance start → slurmd registered (the node's own
bootstrap; target ≤ 15 s) and last registration → job running (Slurm's periodic check, up to ~30 s), with
submit → running (target ≤ 45 s for 4 nodes). EC2's own launch and boot times are not in these figures
(ParallelCluster's published baseline is ~294 s median from submit to start on a dynamic node, most of it
EC2).
"""

from __future__ import annotations

import calendar
import dataclasses
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402

from gpucluster.clusterfile import load  # noqa: E402
from gpucluster.power import config, resume  # noqa: E402
from gpucluster_rack.emulated_deploy import Deployer, synth_capacity  # noqa: E402
from gpucluster_rack.proxy import wait_for_port  # noqa: E402

PORT = 5499
SIZES = (1, 4, 64, 500)


class NoSlurm:
    """The benchmark launches every node; nothing is set DOWN."""

    def set_down(self, nodes: list[str], reason: str) -> None:
        """A launch failed: the benchmark stops."""
        raise RuntimeError(f"{nodes}: {reason}")


def main() -> None:
    """Start moto, deploy the widened example, time each size three times, print the table."""
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    moto = subprocess.Popen(
        [str(ROOT / ".venv/bin/moto_server"), "-H", "127.0.0.1", "-p", str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port("127.0.0.1", PORT, timeout_s=60)
        endpoint = f"http://127.0.0.1:{PORT}"
        cluster = load(ROOT / "clusters/example.yaml").cluster
        assert cluster.aws is not None
        wide = [
            g.model_copy(update={"max_count": 500}) if g.market == "spot" else g for g in cluster.aws.capacity
        ]
        cluster = cluster.model_copy(update={"aws": cluster.aws.model_copy(update={"capacity": wide})})
        with tempfile.TemporaryDirectory() as work:
            template = synth_capacity(cluster, "clusters/example.yaml", Path(work) / "cdk.out")
            session = boto3.session.Session(region_name=cluster.aws.region)
            ec2 = session.client("ec2", endpoint_url=endpoint)
            ssm = session.client("ssm", endpoint_url=endpoint)
            Deployer(
                ec2, ssm, vpc_cidr="10.100.0.0/16", subnet_cidr="10.100.0.0/17", zone="us-east-1a"
            ).deploy(template)
            cfg = dataclasses.replace(config.from_cluster(cluster), state_dir=work, endpoint_url=endpoint)
            ec2, ssm = resume.clients(cfg)
            rows = []
            for size in SIZES:
                times = []
                for _ in range(3):
                    nodes = tuple(f"p5-spot-{i}" for i in range(1, size + 1))
                    start = time.perf_counter()
                    launches = resume.resume(
                        cfg, [resume.Request(nodes, 1)], ec2=ec2, ssm=ssm, slurm=NoSlurm()
                    )
                    times.append(time.perf_counter() - start)
                    assert sum(len(launch.instances) for launch in launches) == size
                    ids = [i for launch in launches for i in launch.instances.values()]
                    for first in range(0, len(ids), 500):
                        ec2.terminate_instances(InstanceIds=ids[first : first + 500])
                rows.append((size, statistics.median(times)))
    finally:
        moto.terminate()
        moto.wait(timeout=10)
    base = rows[0][1]
    print(f"{'nodes':>6} {'ResumeProgram s':>16} {'ratio to 1 node':>16}")
    for size, seconds in rows:
        print(f"{size:>6} {seconds:>16.3f} {seconds / base:>16.2f}")
    sixty_four = dict(rows)[64]
    print(f"64-node resume: {sixty_four:.2f} s (target ≤ 2 s): {'met' if sixty_four <= 2 else 'NOT met'}")


def _stamp(text: str) -> float:
    """Epoch seconds of `2026-12-04T00:23:50.307` (UTC, optional trailing Z)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{fraction or 0}")


def rack_phases() -> None:
    """Boot the burst rack, run a 1-node and a 4-node job, print each phase."""
    from gpucluster_rack.burst_rack import USER, burst_rack  # noqa: PLC0415 (needs root and the rack tools)

    rows = []
    with burst_rack("benchburst") as burst:
        if burst.first.rc != 0:
            raise RuntimeError(burst.first.output[-3000:])
        ctl = lambda command: burst.rack.ssh("ctl", command, timeout=600)  # noqa: E731
        for nodes in (1, 4):
            booted_before = len(burst.runner.events)
            submitted = time.time()
            job = ctl(f"su - {USER} -c 'sbatch --parsable -W -p cloud -N{nodes} --wrap hostname'").strip()
            fields = dict(re.findall(r"(\w+)=(\S*)", ctl(f"scontrol show job -o {job}")))
            started = _stamp(fields["StartTime"])
            log = ctl("cat /var/lib/gpucluster/power/power.log").splitlines()
            resume = [_stamp(line.split()[0]) for line in log if "gpucluster-resume: start" in line]
            done = [_stamp(line.split()[0]) for line in log if "gpucluster-resume: done" in line]
            first_resume = min(t for t in resume if t >= submitted - 1)
            last_done = max(t for t in done if t >= first_resume)
            boots = [t for t, _, what in burst.runner.events[booted_before:] if what == "boot"]
            registered = [
                _stamp(line[1:24])
                for line in ctl("grep 'now responding' /var/log/slurm/slurmctld.log").splitlines()
                if _stamp(line[1:24]) >= first_resume
            ]
            rows.append(
                (
                    nodes,
                    first_resume - submitted,
                    last_done - first_resume,
                    max(boots) - first_resume,
                    max(r - b for r, b in zip(sorted(registered)[-nodes:], sorted(boots), strict=False)),
                    started - max(registered),
                    started - submitted,
                )
            )
            while ctl("sinfo -h -p cloud -o %t").split() != ["idle~"]:
                time.sleep(3)
    print(
        f"{'nodes':>5} {'submit→resume':>14} {'resume wall':>12} {'→last boot':>11} {'boot→registered':>16}"
        f" {'registered→run':>15} {'submit→running':>15}"
    )
    widths = (5, 14, 12, 11, 16, 15, 15)
    for row in rows:
        print(
            " ".join(
                f"{value:>{w}.2f}" if i else f"{value:>{w}}"
                for i, (value, w) in enumerate(zip(row, widths, strict=True))
            )
        )


if __name__ == "__main__":
    main()
    if "--rack" in sys.argv[1:]:
        rack_phases()
