"""The central scheduler role (`drf`, `drf-bestfit`, `fifo`; thesis §4.1).

It stores each user's pending task and, once per allocation tick, asks its rule for one
(task, server). It reserves the task's demand in its own view of the cluster — it is the only
allocator, so its view is exact — proposes to the user, and on acceptance tells the server to
launch the task. A declined proposal gives the reservation back.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodes.actor import Actor
from protocols.central import CentralRule, PendingTask
from protocols.cluster import ClusterView
from protocols.messages import Accept, Decline, Launch, Proposal, TaskRequest, handles
from protocols.resources import Vector

__all__ = ["CentralScheduler"]


class CentralScheduler(Actor):
    __slots__ = ("rule", "cluster", "servers", "pending", "proposed", "_arrivals")

    def __init__(self, actor_id: int, rule: CentralRule, servers: Sequence[int], capacities: Sequence[Vector]) -> None:
        super().__init__(actor_id)
        self.rule = rule
        self.servers = list(servers)
        self.cluster = ClusterView(capacities)
        self.pending: dict[int, PendingTask] = {}
        self.proposed: dict[tuple[int, int], tuple[int, Vector]] = {}
        self._arrivals = 0

    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        self._arrivals += 1
        self.pending[msg.user] = PendingTask(msg.user, msg.task, msg.demand, msg.share, self._arrivals)

    def on_tick(self, now: float) -> None:
        if not self.pending:
            return
        choice = self.rule.choose(list(self.pending.values()), self.cluster)
        if choice is None:
            return
        task, index = choice
        self.cluster.reserve(index, task.demand)
        del self.pending[task.user]
        self.proposed[(task.user, task.task)] = (index, task.demand)
        self.send(task.user, Proposal(task.task, self.id))

    @handles(Accept)
    def on_accept(self, msg: Accept, now: float) -> None:
        index, demand = self.proposed.pop((msg.user, msg.task))
        self.send(self.servers[index], Launch(msg.user, msg.task, demand))

    @handles(Decline)
    def on_decline(self, msg: Decline, now: float) -> None:
        index, demand = self.proposed.pop((msg.user, msg.task))
        self.cluster.release(index, demand)
