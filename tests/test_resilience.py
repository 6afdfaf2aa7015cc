"""Resilience (issue 16): timeouts, retries and idempotent requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.kernel.messages import (
    Accept,
    EndAck,
    Launch,
    Proposal,
    RequestAck,
    ServerReply,
    ServerRequest,
    TaskEnded,
    TaskExit,
    TaskRequest,
    TaskStarted,
)
from drfemu.nodes.actor import WakeUp
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.nodes.user import FiniteUserNode, UserNode
from drfemu.nodes.wakes import RepeatEnd
from drfemu.protocols.drf import Drf
from drfemu.protocols.registry import PROTOCOLS
from drfemu.protocols.resilience import MAX_BACKOFF, Backoff, retransmission_timeout
from drfemu.schema.workload import Workload
from tests.test_finite_tasks import finite_workloads

TOTAL = (9.0, 18.0)
RTO = 0.108


def _wakes(node: Any) -> list[WakeUp]:
    return [item for item in node.take_port() if isinstance(item, WakeUp)]


def test_the_timeout_is_a_tick_plus_four_round_trips_and_backs_off_to_a_cap() -> None:
    assert retransmission_timeout(0.001, 0.1) == pytest.approx(RTO)
    backoff = Backoff(1.0)
    waits = [backoff.next() for _ in range(10)]
    assert waits[:3] == [2.0, 4.0, 8.0] and waits[-1] == MAX_BACKOFF
    assert backoff.reset() == 1.0


def test_a_user_asks_again_at_each_step_of_the_handshake() -> None:
    user = UserNode(5, gateway=9, demand=(1.0, 4.0), total=TOTAL, rto=RTO)
    user.start(0.0)
    assert user.take_outbox() == [(9, ServerRequest(5))]
    (wake,) = _wakes(user)
    assert wake.at == pytest.approx(RTO)
    user.on_timer(wake.key, wake.at)  # the request or its reply was lost
    assert user.take_outbox() == [(9, ServerRequest(5))]
    (again,) = _wakes(user)
    assert again.at - wake.at == pytest.approx(2 * RTO)
    user.receive(ServerReply(2), 0.4)
    user.receive(ServerReply(2), 0.41)  # the answer to the repeated question
    assert user.take_outbox() == [(2, TaskRequest(5, 0, (1.0, 4.0), 0.0))]
    user.on_timer(again.key, again.at)  # stale: progress restarted the chain
    assert user.take_outbox() == []
    after_reply = _wakes(user)[-1]
    user.on_timer(after_reply.key, after_reply.at)
    assert user.take_outbox() == [(2, TaskRequest(5, 0, (1.0, 4.0), 0.0))]
    user.receive(Proposal(0, 2), 0.6)
    assert user.take_outbox() == [(2, Accept(5, 0))]
    user.receive(Proposal(0, 2), 0.7)  # the proposer did not hear the Accept
    assert user.take_outbox() == [(2, Accept(5, 0))]
    after_accept = _wakes(user)[-1]
    user.on_timer(after_accept.key, after_accept.at)  # the start notice was lost
    assert user.take_outbox() == [(2, Accept(5, 0))]
    user.receive(TaskStarted(0, 2), 1.0)
    assert user.tasks == 1


def test_a_finite_user_counts_a_repeated_end_once_and_acknowledges_each() -> None:
    user = FiniteUserNode(5, 9, [(0.0, (1.0, 1.0))], (4.0, 4.0), rto=RTO)
    user.start(0.0)
    user.receive(ServerReply(2), 0.001)
    user.receive(Proposal(0, 2), 0.1)
    user.take_outbox()
    # the start notice was lost and the task already ended: the end says both
    user.receive(TaskEnded(5, 0, 3), 2.0)
    user.receive(TaskEnded(5, 0, 3), 2.2)
    assert user.counters() == {"submitted": 1, "waiting": 0, "placing": 0, "running": 0, "finished": 1}
    assert [m for _, m in user.take_outbox() if isinstance(m, EndAck)] == [EndAck(5, 0, 5), EndAck(5, 0, 5)]


def test_the_scheduler_answers_repeated_requests_as_the_first_time() -> None:
    scheduler = CentralScheduler(20, Drf(), servers=[0], capacities=[TOTAL], ack_ends=True)
    scheduler.receive(TaskRequest(5, 0, (1.0, 4.0), 0.0), 0.0)
    scheduler.receive(TaskRequest(6, 0, (3.0, 1.0), 0.0), 0.0)
    scheduler.receive(TaskRequest(5, 0, (1.0, 4.0), 0.0), 0.05)  # repeated: keeps its place
    assert scheduler.take_outbox() == [(5, RequestAck(0, 20)), (6, RequestAck(0, 20))]  # a repeat is not acknowledged
    scheduler.on_tick(0.1)
    assert scheduler.take_outbox() == [(5, Proposal(0, 20))]
    scheduler.receive(TaskRequest(5, 0, (1.0, 4.0), 0.0), 0.2)  # the proposal was lost
    assert scheduler.take_outbox() == [(5, Proposal(0, 20))]
    scheduler.receive(Accept(5, 0), 0.21)
    scheduler.receive(Accept(5, 0), 0.22)  # the start notice was lost: launch again
    assert scheduler.take_outbox() == [(0, Launch(5, 0, (1.0, 4.0)))] * 2
    scheduler.receive(TaskRequest(5, 0, (1.0, 4.0), 0.0), 0.3)  # it runs: the launch (and so the start) repeats
    assert scheduler.take_outbox() == [(0, Launch(5, 0, (1.0, 4.0)))] and 5 not in scheduler.pending
    scheduler.receive(TaskEnded(5, 0, 0), 1.0)
    scheduler.receive(TaskEnded(5, 0, 0), 1.2)
    assert scheduler.cluster.free[0] == [9.0, 18.0]  # released once
    assert scheduler.take_outbox() == [(0, EndAck(5, 0, 20))] * 2
    scheduler.receive(Accept(5, 0), 1.3)  # for a task that ended: nothing to launch
    assert scheduler.take_outbox() == []


def test_a_server_starts_a_task_once_and_repeats_its_end_until_acknowledged() -> None:
    node = ResourceNode(0, TOTAL, scheduler=20, rto=RTO)
    node.receive(Launch(5, 0, (3.0, 1.0)), 0.1)
    node.receive(Launch(5, 0, (3.0, 1.0)), 0.2)
    assert node.take_outbox() == [(5, TaskStarted(0, 0))] * 2 and node.free == [6.0, 17.0]
    node.take_port()
    node.receive(TaskExit(5, 0), 1.0)
    assert node.take_outbox() == [(5, TaskEnded(5, 0, 0)), (20, TaskEnded(5, 0, 0))]
    (wake,) = _wakes(node)
    node.receive(EndAck(5, 0, 20), 1.01)
    node.on_timer(wake.key, wake.at)
    assert node.take_outbox() == [(5, TaskEnded(5, 0, 0))]  # only the user has not answered
    node.receive(EndAck(5, 0, 5), 1.3)
    later = _wakes(node)[-1]
    node.on_timer(later.key, later.at)
    assert node.take_outbox() == [] and node.unacked.pending == {}
    node.receive(Launch(5, 0, (3.0, 1.0)), 1.5)  # a late launch of an ended task
    assert node.take_outbox() == [] and node.free == [9.0, 18.0]


def _server(rto: float) -> Any:
    from drfemu.kernel.streams import RandomStreams
    from drfemu.nodes.server import ServerConfig, server_class
    from drfemu.protocols.dgdrf import DgdrfRule

    config = ServerConfig(view_size=2, cyclon_view=2, shuffle_length=1, walk_ttl=3, tick=0.1, rto=rto)
    node = server_class(DgdrfRule)(0, TOTAL, DgdrfRule(), {}, RandomStreams(1).node(0), config)
    node.take_port()
    return node


def test_a_distributed_server_repeats_its_offer_and_never_starts_a_task_twice() -> None:
    node = _server(RTO)
    node.propose(5, 0, (3.0, 1.0))
    node.propose(5, 0, (3.0, 1.0))  # a repeated walk reached it again: the offer stands
    assert node.take_outbox() == [(5, Proposal(0, 0))] and node.free == [6.0, 17.0]
    (wake,) = node.take_port()
    node.on_timer(wake.key, 0.2)  # no answer: offer again
    assert node.take_outbox() == [(5, Proposal(0, 0))]
    node.take_port()
    node.receive(Accept(5, 0), 0.3)
    node.receive(Accept(5, 0), 0.4)  # the start notice was lost
    assert node.take_outbox() == [(5, TaskStarted(0, 0))] * 2 and node.free == [6.0, 17.0]
    node.on_timer(wake.key, 0.5)  # the offer was answered: nothing more
    assert node.take_outbox() == []
    node.receive(TaskExit(5, 0), 1.0)
    node.take_port()
    node.receive(EndAck(5, 0, 5), 1.01)
    node.on_timer(RepeatEnd(5, 0), 1.2)
    assert node.take_outbox() == [(5, TaskEnded(5, 0, 0))] and node.notices.pending == {}


def test_without_faults_a_distributed_server_asks_for_no_wake_ups() -> None:
    node = _server(0.0)
    node.propose(5, 0, (3.0, 1.0))
    assert node.take_port() == [] and node.notices.pending == {}


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(finite_workloads, st.sampled_from(sorted(PROTOCOLS)), st.integers(1, 3), st.sampled_from([0.01, 0.05, 0.2]))
def test_every_protocol_loses_nothing_on_a_lossy_network(tmp_path_factory: Any, w: Workload, protocol: str,
                                                         seed: int, loss: float) -> None:
    """Up to 20 % of all messages lost: every task still finishes exactly once (the ledger
    raises on a second start, the harness on a capacity violation), deterministically."""
    faults: Path = tmp_path_factory.mktemp("f") / "loss.toml"
    faults.write_text(f"loss = {loss}\n")
    params = {"protocol": protocol, "seed": seed, "faults": str(faults), "sample_every": 1.0, "swm_every": 0,
              "neighbors": max(1, min(2, len(w.servers) - 1)), "probe_d": 1}
    r = run_emulation(RunConfig.build(w, **params)).to_dict()
    assert r["status"] == "finished", r["end_reason"]
    assert r["ledger"] == {"waiting": 0, "placing": 0, "running": 0, "finished": w.task_count, "killed": 0,
                           "resubmitted": 0, "rerun": 0, "lost": 0}
    again = run_emulation(RunConfig.build(w, **params)).to_dict()
    assert again["events"] == r["events"] and again["ledger"] == r["ledger"]
