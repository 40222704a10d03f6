"""The spot agent against the metadata emulator (IMDSv2 tokens, notices set by the test) and a recording
Slurm (the rack test drives the real scontrol, squeue and scancel)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucluster.spot.agent import Agent, AgentConfig, Metadata, MetadataError
from gpucluster_rack.imds import InstanceMetadata, LoopbackServer

NOTICE_TIME = 1_900_000_000.0  # the emulated "now" is 120 s before it
NOTICE = {"action": "terminate", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOTICE_TIME))}


class RecordingNode:
    """Jobs a test places on the node; records what the agent tells Slurm."""

    def __init__(self, jobs: list[str]) -> None:
        self.running = list(jobs)
        self.calls: list[tuple[str, str]] = []
        self.leave_on_signal: set[str] = set()  # jobs that checkpoint and exit when signalled

    def drain(self, reason: str) -> None:
        self.calls.append(("drain", reason))

    def jobs(self) -> list[str]:
        return list(self.running)

    def signal(self, job: str, signal: str) -> None:
        self.calls.append(("signal", f"{job}:{signal}"))
        if job in self.leave_on_signal:
            self.running.remove(job)

    def requeue(self, job: str) -> None:
        self.calls.append(("requeue", job))
        self.running.remove(job)


class Clock:
    """Emulated time: sleeping advances it."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.fixture
def imds() -> Iterator[LoopbackServer]:
    server = LoopbackServer(InstanceMetadata("i-0123456789abcdef0", "us-east-1a"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _agent(imds: LoopbackServer, node: RecordingNode, tmp_path: Path, clock: Clock) -> Agent:
    cfg = AgentConfig(node="p5-spot-1", imds_url=imds.url, state_file=str(tmp_path / "handled.json"))
    return Agent(cfg, Metadata(cfg.imds_url), node, clock=clock, sleep=clock.sleep, log=lambda _: None)


def test_nothing_happens_without_a_notice(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode(["11"])
    _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 120)).poll()
    assert node.calls == []
    assert ("PUT", "/latest/api/token", 200) in imds.metadata.requests


def test_a_rebalance_recommendation_drains_once_and_kills_nothing(
    imds: LoopbackServer, tmp_path: Path
) -> None:
    node = RecordingNode(["11"])
    agent = _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 120))
    imds.metadata.rebalance = {"noticeTime": "2030-03-17T17:46:40Z"}
    for _ in range(3):
        agent.poll()
    assert node.calls == [("drain", "gpucluster: spot rebalance recommendation at 2030-03-17T17:46:40Z")]
    assert node.running == ["11"]


def test_an_interruption_signals_every_job_and_requeues_those_still_there_at_the_deadline(
    imds: LoopbackServer, tmp_path: Path
) -> None:
    node = RecordingNode(["11", "12"])
    node.leave_on_signal = {"11"}  # 11 honours the signal: checkpoints and exits (Slurm requeues it)
    clock = Clock(NOTICE_TIME - 120)
    agent = _agent(imds, node, tmp_path, clock)
    imds.metadata.spot_action = NOTICE
    agent.poll()
    assert node.calls == [
        ("drain", f"gpucluster: spot interruption: terminate at {NOTICE['time']}"),
        ("signal", "11:USR1"),
        ("signal", "12:USR1"),
        ("requeue", "12"),
    ]
    # 12 ignored the signal: requeued at the notice time less the safety margin, not before.
    assert clock.now == pytest.approx(NOTICE_TIME - agent.cfg.safety_margin_s)
    agent.poll()
    assert len(node.calls) == 4  # the same notice, polled again: nothing more


def test_jobs_that_all_leave_end_the_wait_early(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode(["11"])
    node.leave_on_signal = {"11"}
    clock = Clock(NOTICE_TIME - 120)
    imds.metadata.spot_action = NOTICE
    _agent(imds, node, tmp_path, clock).poll()
    assert [c[0] for c in node.calls] == ["drain", "signal"]
    assert clock.slept <= 1.0  # one look after the signal, not the 100 s to the deadline


def test_a_restarted_agent_does_not_act_on_a_notice_again(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode(["11"])
    imds.metadata.spot_action = NOTICE
    _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 120)).poll()
    acted = list(node.calls)
    node.running = ["13"]
    _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 60)).poll()
    assert node.calls == acted
    assert json.loads((tmp_path / "handled.json").read_text()) == [f"interruption:terminate:{NOTICE['time']}"]


def test_a_new_notice_time_is_a_new_notice(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode([])
    agent = _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 120))
    imds.metadata.rebalance = {"noticeTime": "2030-03-17T17:46:40Z"}
    agent.poll()
    imds.metadata.rebalance = {"noticeTime": "2030-03-17T18:00:00Z"}
    agent.poll()
    assert [c[1] for c in node.calls] == [
        "gpucluster: spot rebalance recommendation at 2030-03-17T17:46:40Z",
        "gpucluster: spot rebalance recommendation at 2030-03-17T18:00:00Z",
    ]


def test_a_forgotten_token_is_renewed(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode(["11"])
    agent = _agent(imds, node, tmp_path, Clock(NOTICE_TIME - 120))
    agent.poll()
    imds.metadata.tokens.clear()  # the service restarted, or the token expired early
    imds.metadata.rebalance = {"noticeTime": "2030-03-17T17:46:40Z"}
    agent.poll()
    assert [c[0] for c in node.calls] == ["drain"]
    puts = [r for r in imds.metadata.requests if r[0] == "PUT"]
    assert len(puts) == 2
    assert ("GET", "/latest/meta-data/spot/instance-action", 401) in imds.metadata.requests


def test_an_unreachable_or_hanging_service_is_survived(imds: LoopbackServer, tmp_path: Path) -> None:
    node = RecordingNode(["11"])
    logged: list[str] = []
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused_url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
    cfg = AgentConfig(node="p5-spot-1", imds_url=refused_url, state_file=str(tmp_path / "h.json"))
    clock = Clock(NOTICE_TIME - 120)
    agent = Agent(cfg, Metadata(refused_url), node, clock=clock, sleep=clock.sleep, log=logged.append)
    agent.poll()
    assert node.calls == [] and "metadata unreadable" in logged[0]
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        hanging = Metadata(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.5)
        with pytest.raises(MetadataError):
            hanging.get("/latest/meta-data/spot/instance-action")
    # The service comes back: the next poll acts.
    agent.metadata = Metadata(imds.url)
    imds.metadata.spot_action = NOTICE
    agent.poll()
    assert node.calls[0][0] == "drain"
