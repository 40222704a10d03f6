"""The spot agent of a cloud node: acts on EC2's rebalance recommendation and two-minute notice.

Polls the instance metadata service (IMDSv2; the token is renewed before it expires and after a 401):
- a rebalance recommendation drains the node (running jobs go on, no new job starts);
- an interruption notice drains it, signals every job on it (batch shell and steps), waits until the
  jobs end or the notice time less a safety margin, then requeues the jobs still there.
Each notice is acted on once, across agent restarts (a state file). Standard library only: it runs on
the node image's system Python. https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
"""

from __future__ import annotations

import calendar
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

INSTANCE_ACTION = "/latest/meta-data/spot/instance-action"
REBALANCE = "/latest/meta-data/events/recommendations/rebalance"
DEFAULT_CONFIG = Path("/etc/gpucluster/spot-agent.json")
# gpucluster.names.POWER_REASON, restated: the node image runs this file alone, without the package.
# The reconciler clears drains with it once the instance is gone (gpucluster.power.reconcile).
REASON_PREFIX = "gpucluster: "


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """What the join writes to /etc/gpucluster/spot-agent.json (the node's name) and the cluster file sets."""

    node: str
    imds_url: str = "http://169.254.169.254"
    poll_seconds: float = 5.0
    signal: str = "USR1"
    safety_margin_s: float = 20.0  # requeue this long before the notice time: the instance stops then
    state_file: str = "/var/lib/gpucluster/spot/handled.json"
    token_ttl_s: int = 21600

    @classmethod
    def load(cls, path: Path = DEFAULT_CONFIG) -> AgentConfig:
        """Read the configuration file (unknown keys are an error: a typo must not pass silently)."""
        return cls(**json.loads(path.read_text()))


class MetadataError(Exception):
    """The metadata service did not answer (timeout, refused, 5xx)."""


class Metadata:
    """IMDSv2 reads with a session token renewed before it expires and after a 401."""

    def __init__(self, base_url: str, *, ttl_s: int = 21600, timeout_s: float = 2.0) -> None:
        self.base_url, self.ttl_s, self.timeout_s = base_url.rstrip("/"), ttl_s, timeout_s
        self._token = ""
        self._expires = 0.0

    def get(self, path: str) -> str | None:
        """The value at path, or None when the service has none (404)."""
        for attempt in (1, 2):
            try:
                return self._request("GET", path, {"X-aws-ec2-metadata-token": self._session()})
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return None
                if error.code == 401 and attempt == 1:
                    self._expires = 0.0  # the service forgot the token (e.g. it restarted): a new one
                    continue
                raise MetadataError(f"GET {path}: HTTP {error.code}") from error
        raise AssertionError("unreachable")

    def _session(self) -> str:
        if time.monotonic() >= self._expires:
            headers = {"X-aws-ec2-metadata-token-ttl-seconds": str(self.ttl_s)}
            try:
                self._token = self._request("PUT", "/latest/api/token", headers)
            except urllib.error.HTTPError as error:
                raise MetadataError(f"token: HTTP {error.code}") from error
            self._expires = time.monotonic() + self.ttl_s * 0.8  # renew well before the service drops it
        return self._token

    def _request(self, method: str, path: str, headers: dict[str, str]) -> str:
        request = urllib.request.Request(self.base_url + path, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return str(answer.read().decode())
        except urllib.error.HTTPError:
            raise
        except (OSError, ValueError) as error:  # URLError, timeouts, resets, bad answers
            raise MetadataError(f"{method} {path}: {error}") from error


class NodeControl(Protocol):
    """What the agent tells Slurm about its own node and its jobs."""

    def drain(self, reason: str) -> None:
        """No new job starts on the node."""

    def jobs(self) -> list[str]:
        """Ids of the jobs on the node."""
        return []

    def signal(self, job: str, signal: str) -> None:
        """Send a signal to a job's batch shell and steps."""

    def requeue(self, job: str) -> None:
        """Put a job back to pending."""


class SlurmNode:
    """NodeControl through Slurm's commands; the agent runs as root, which Slurm trusts for these."""

    def __init__(self, node: str, run: Callable[[list[str]], str] | None = None) -> None:
        self.node = node
        self._run = run or _run

    def drain(self, reason: str) -> None:
        """No new job starts here; running jobs go on."""
        self._run(["scontrol", "update", f"nodename={self.node}", "state=DRAIN", f"reason={reason}"])

    def jobs(self) -> list[str]:
        """Ids of the jobs running (or being set up) on this node."""
        out = self._run(["squeue", "--noheader", f"--nodelist={self.node}", "--states=CF,R", "--format=%A"])
        return [line.strip() for line in out.splitlines() if line.strip()]

    def signal(self, job: str, signal: str) -> None:
        """The batch shell and every step of the job get the signal (--full includes the batch shell)."""
        self._run(["scancel", "--full", f"--signal={signal}", job])

    def requeue(self, job: str) -> None:
        """Back to pending; Slurm starts it again elsewhere, with SLURM_RESTART_COUNT raised."""
        self._run(["scontrol", "requeue", job])


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


@dataclass(frozen=True)
class Notice:
    """One notice as the metadata service gives it; `key` identifies it across polls and restarts."""

    kind: str  # "interruption" or "rebalance"
    when: str  # its time, ISO 8601 UTC as the metadata service writes it
    action: str = ""  # interruption: terminate, stop or hibernate

    @property
    def key(self) -> str:
        """Kind, action and time: a changed notice (a new time) is a new one."""
        return f"{self.kind}:{self.action}:{self.when}"

    def epoch(self) -> float:
        """The notice time in epoch seconds."""
        return float(calendar.timegm(time.strptime(self.when.rstrip("Z")[:19], "%Y-%m-%dT%H:%M:%S")))


def read_notices(metadata: Metadata) -> list[Notice]:
    """The interruption notice and rebalance recommendation the metadata service holds now."""
    notices = []
    action = metadata.get(INSTANCE_ACTION)
    if action:
        data = json.loads(action)
        notices.append(Notice("interruption", str(data["time"]), str(data.get("action", "terminate"))))
    rebalance = metadata.get(REBALANCE)
    if rebalance:
        notices.append(Notice("rebalance", str(json.loads(rebalance)["noticeTime"])))
    return notices


class Agent:
    """One node's agent: call `poll` every poll_seconds (`run` does)."""

    def __init__(
        self,
        cfg: AgentConfig,
        metadata: Metadata,
        node: NodeControl,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg, self.metadata, self.node = cfg, metadata, node
        self.clock, self.sleep = clock, sleep
        self.log = log or (lambda line: print(line, flush=True))  # stdout: the journal under systemd
        self.state = Path(cfg.state_file)
        self.handled: set[str] = set(json.loads(self.state.read_text())) if self.state.exists() else set()

    def poll(self) -> None:
        """Read the notices once and act on each new one; metadata errors are logged, never fatal."""
        try:
            notices = read_notices(self.metadata)
        except (MetadataError, ValueError, KeyError) as error:
            self.log(f"metadata unreadable, retrying: {error}")
            return
        for notice in notices:
            if notice.key in self.handled:
                continue
            if notice.kind == "interruption":
                self._interruption(notice)
            else:
                self.node.drain(f"{REASON_PREFIX}spot rebalance recommendation at {notice.when}")
                self.log(f"rebalance recommendation at {notice.when}: drained {self.cfg.node}")
            self._remember(notice)

    def _interruption(self, notice: Notice) -> None:
        self.node.drain(f"{REASON_PREFIX}spot interruption: {notice.action} at {notice.when}")
        jobs = self.node.jobs()
        self.log(f"interruption notice ({notice.action} at {notice.when}): drained, jobs {jobs or 'none'}")
        for job in jobs:
            self.node.signal(job, self.cfg.signal)
            self.log(f"job {job}: sent SIG{self.cfg.signal}")
        # Remember before waiting: a restart during the grace must not signal the jobs twice.
        self._remember(notice)
        deadline = notice.epoch() - self.cfg.safety_margin_s
        remaining = list(jobs)
        while remaining and self.clock() < deadline:
            self.sleep(min(1.0, max(0.0, deadline - self.clock())))
            still = set(self.node.jobs())
            remaining = [job for job in remaining if job in still]
        for job in remaining:
            try:
                self.node.requeue(job)
                self.log(f"job {job}: requeued {deadline - self.clock():.0f} s before the stop")
            except RuntimeError as error:  # it ended between the last look and now
                self.log(f"job {job}: not requeued: {error}")
        if not remaining:
            self.log("every job left the node before the deadline")

    def _remember(self, notice: Notice) -> None:
        self.handled.add(notice.key)
        self.state.parent.mkdir(parents=True, exist_ok=True)
        partial = self.state.with_suffix(".tmp")
        partial.write_text(json.dumps(sorted(self.handled)))
        partial.replace(self.state)

    def run(self) -> None:
        """Poll forever."""
        self.log(f"spot agent for {self.cfg.node}: polling every {self.cfg.poll_seconds:g} s")
        while True:
            started = self.clock()
            self.poll()
            self.sleep(max(0.0, self.cfg.poll_seconds - (self.clock() - started)))


def main(argv: list[str] | None = None) -> int:
    """Console script gpucluster-spot-agent [CONFIG]."""
    args = sys.argv[1:] if argv is None else argv
    cfg = AgentConfig.load(Path(args[0]) if args else DEFAULT_CONFIG)
    Agent(cfg, Metadata(cfg.imds_url, ttl_s=cfg.token_ttl_s), SlurmNode(cfg.node)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
