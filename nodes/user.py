"""The user role (thesis Algorithm 3, SPEC §3).

A user has one demand vector and submits tasks endlessly, one at a time: it asks the
gateway for a server, sends its task (with its current `G_i`) there, accepts the first
proposal for its current task and declines any later one, and, once told the task runs,
adds one task to its allocation (`G_i = n_i · s_i`) and starts the next task.
"""

from __future__ import annotations

from nodes.actor import Actor
from protocols.messages import (
    Accept,
    Decline,
    Proposal,
    ServerReply,
    ServerRequest,
    TaskRequest,
    TaskStarted,
    handles,
)
from protocols.resources import Vector, dominant_share

__all__ = ["UserNode"]


class UserNode(Actor):
    __slots__ = ("gateway", "demand", "task_share", "tasks", "share", "task", "accepted")

    def __init__(self, actor_id: int, gateway: int, demand: Vector, total: Vector) -> None:
        super().__init__(actor_id)
        self.gateway = gateway
        self.demand = demand
        self.task_share = dominant_share(demand, total)
        self.tasks = 0
        self.share = 0.0
        self.task = 0
        self.accepted = False

    def start(self, now: float) -> None:
        """Begin submitting: ask the gateway where the first task should go."""
        self.send(self.gateway, ServerRequest(self.id))

    @handles(ServerReply)
    def on_server_reply(self, msg: ServerReply, now: float) -> None:
        self.send(msg.server, TaskRequest(self.id, self.task, self.demand, self.share))

    @handles(Proposal)
    def on_proposal(self, msg: Proposal, now: float) -> None:
        if msg.task == self.task and not self.accepted:
            self.accepted = True
            self.send(msg.proposer, Accept(self.id, msg.task))
        else:
            self.send(msg.proposer, Decline(self.id, msg.task))

    @handles(TaskStarted)
    def on_task_started(self, msg: TaskStarted, now: float) -> None:
        if msg.task != self.task:
            return  # a start for a task this user already counted: nothing to add
        self.tasks += 1
        self.share = self.tasks * self.task_share
        self.task += 1
        self.accepted = False
        self.send(self.gateway, ServerRequest(self.id))
