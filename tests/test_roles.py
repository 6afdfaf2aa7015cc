"""Node roles as pure handlers, driven by hand without an event loop (thesis Algorithm 3)."""

from __future__ import annotations

import random

import pytest

from drfemu.kernel.events import TaskAllocated
from drfemu.kernel.messages import (
    Accept,
    Decline,
    Launch,
    Proposal,
    ServerReply,
    ServerRequest,
    TaskRequest,
    TaskStarted,
)
from drfemu.kernel.resources import CapacityViolation
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.nodes.user import UserNode
from drfemu.protocols.drf import Drf

TOTAL = (9.0, 18.0)


def test_user_handshake_accepts_first_proposal_only() -> None:
    user = UserNode(5, gateway=9, demand=(1.0, 4.0), total=TOTAL)
    user.start(0.0)
    assert user.take_outbox() == [(9, ServerRequest(5))]
    user.receive(ServerReply(2), 0.001)
    assert user.take_outbox() == [(2, TaskRequest(5, 0, (1.0, 4.0), 0.0))]
    user.receive(Proposal(0, 2), 0.1)
    user.receive(Proposal(0, 3), 0.1)
    assert user.take_outbox() == [(2, Accept(5, 0)), (3, Decline(5, 0))]
    user.receive(TaskStarted(0, 2), 0.102)
    assert user.tasks == 1 and user.share == pytest.approx(2 / 9)
    assert user.take_outbox() == [(9, ServerRequest(5))]
    user.receive(TaskStarted(0, 2), 0.103)  # a duplicate start changes nothing
    assert user.tasks == 1 and user.take_outbox() == []


def test_gateway_modes() -> None:
    central = Gateway(10, "central", [0, 1, 2], [5, 6], random.Random(1), central=11)
    central.receive(ServerRequest(5), 0.0)
    assert central.take_outbox() == [(5, ServerReply(11))]
    home = Gateway(10, "home", [0, 1, 2], [5, 6], random.Random(1))
    for _ in range(3):
        home.receive(ServerRequest(6), 0.0)
    replies = {msg.server for _, msg in home.take_outbox()}
    assert replies == {home.homes[6]}
    rand = Gateway(10, "random", list(range(50)), [5], random.Random(1))
    for _ in range(40):
        rand.receive(ServerRequest(5), 0.0)
    assert len({msg.server for _, msg in rand.take_outbox()}) > 10
    with pytest.raises(ValueError):
        Gateway(10, "broadcast", [0], [5], random.Random(1))


def test_scheduler_proposes_launches_and_releases_on_decline() -> None:
    scheduler = CentralScheduler(20, Drf(), servers=[0], capacities=[TOTAL])
    scheduler.receive(TaskRequest(5, 0, (1.0, 4.0), 0.0), 0.0)
    scheduler.receive(TaskRequest(6, 0, (3.0, 1.0), 0.0), 0.0)
    scheduler.on_tick(0.1)
    assert scheduler.take_outbox() == [(5, Proposal(0, 20))]  # equal shares: lower user id
    scheduler.receive(Accept(5, 0), 0.102)
    assert scheduler.take_outbox() == [(0, Launch(5, 0, (1.0, 4.0)))]
    scheduler.on_tick(0.2)
    assert scheduler.take_outbox() == [(6, Proposal(0, 20))]
    scheduler.receive(Decline(6, 0), 0.202)
    assert scheduler.cluster.free[0] == [8.0, 14.0]


def test_resource_node_runs_tasks_and_refuses_overcommit() -> None:
    node = ResourceNode(0, TOTAL)
    node.receive(Launch(5, 0, (3.0, 1.0)), 0.1)
    assert node.take_outbox() == [(5, TaskStarted(0, 0))]
    assert node.take_port() == [TaskAllocated(0.1, 0, 5, 0, (3.0, 1.0))] and node.free == [6.0, 17.0]
    with pytest.raises(CapacityViolation):
        node.receive(Launch(5, 1, (7.0, 1.0)), 0.2)
