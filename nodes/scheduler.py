"""The central scheduler role (`drf`, `drf-bestfit`, `fifo` and the online rules; thesis §4.1).

It stores each user's pending task and, once per allocation tick, asks its rule for a (task,
server) — up to `per_tick` times (0: until the rule places nothing more). It reserves the
task's demand in its own view of the cluster — it is the only allocator, so its view is exact
— proposes to the user, and on acceptance tells the server to launch the task. A declined
proposal gives the reservation back. When a task ends, the server's `TaskEnded` gives its room
back and lowers what the scheduler counts its user as holding; a user's `UserShare` refreshes
the `G_i` its pending task carries.

Every request is idempotent by its task id (issue 16), which only matters when messages are
lost and repeated: a `TaskRequest` for a task already proposed repeats the proposal, one for a
task already launched is ignored, one for the pending task refreshes its share and keeps its
place; an `Accept` for a task already launched repeats the `Launch` (the server repeats the
start); a `Decline` or `TaskEnded` it has already handled is ignored. With resilience on
(`ack_ends`) it acknowledges every `TaskEnded` (`EndAck`) and every "nothing waiting" notice
(`ShareAck`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nodes.actor import Actor
from protocols.central import CentralRule, PendingTask
from protocols.cluster import ClusterView
from protocols.messages import (
    Accept,
    Decline,
    EndAck,
    Launch,
    Proposal,
    ShareAck,
    TaskEnded,
    TaskRequest,
    UserShare,
    handles,
)
from protocols.resources import Vector

__all__ = ["CentralScheduler"]


class CentralScheduler(Actor):
    __slots__ = ("rule", "cluster", "servers", "pending", "proposed", "launched", "ended", "held", "running",
                 "per_tick", "ack_ends", "_arrivals", "_index")

    def __init__(self, actor_id: int, rule: CentralRule, servers: Sequence[int], capacities: Sequence[Vector],
                 per_tick: int = 1, ack_ends: bool = False) -> None:
        super().__init__(actor_id)
        self.rule = rule
        self.servers = list(servers)
        self._index = {server: k for k, server in enumerate(self.servers)}
        self.cluster = ClusterView(capacities)
        self.pending: dict[int, PendingTask] = {}
        self.proposed: dict[tuple[int, int], tuple[int, Vector]] = {}
        self.launched: dict[tuple[int, int], tuple[int, Vector]] = {}  # running: (server index, demand)
        self.ended: set[tuple[int, int]] = set()  # with resilience on (`ack_ends`): so a late request is ignored
        self.ack_ends = ack_ends
        self.held: dict[int, Vector] = {}
        self.running: dict[int, int] = {}
        self.per_tick = per_tick
        self._arrivals = 0

    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        key = (msg.user, msg.task)
        if key in self.proposed:
            self.send(msg.user, Proposal(msg.task, self.id))  # the proposal (or the answer) was lost
            return
        if key in self.launched or key in self.ended:
            return
        waiting = self.pending.get(msg.user)
        if waiting is not None and waiting.task == msg.task:
            self.pending[msg.user] = dataclasses.replace(waiting, share=msg.share)
            return
        self._arrivals += 1
        self.pending[msg.user] = PendingTask(msg.user, msg.task, msg.demand, msg.share, self._arrivals,
                                             self.held.get(msg.user, ()))

    def on_tick(self, now: float) -> None:
        started = 0
        while self.pending and (self.per_tick == 0 or started < self.per_tick):
            choice = self.rule.choose(list(self.pending.values()), self.cluster)
            if choice is None:
                return
            task, index = choice
            self.cluster.reserve(index, task.demand)
            del self.pending[task.user]
            self.proposed[(task.user, task.task)] = (index, task.demand)
            self.send(task.user, Proposal(task.task, self.id))
            started += 1

    @handles(Accept)
    def on_accept(self, msg: Accept, now: float) -> None:
        key = (msg.user, msg.task)
        if key not in self.proposed:
            launched = self.launched.get(key)
            if launched is not None:
                self.send(self.servers[launched[0]], Launch(msg.user, msg.task, launched[1]))
            return
        index, demand = self.proposed.pop(key)
        self.launched[key] = (index, demand)
        held = self.held.get(msg.user)
        self.held[msg.user] = demand if held is None else tuple(h + d for h, d in zip(held, demand))
        self.running[msg.user] = self.running.get(msg.user, 0) + 1
        self.send(self.servers[index], Launch(msg.user, msg.task, demand))

    @handles(Decline)
    def on_decline(self, msg: Decline, now: float) -> None:
        proposed = self.proposed.pop((msg.user, msg.task), None)
        if proposed is not None:
            self.cluster.release(*proposed)

    @handles(TaskEnded)
    def on_task_ended(self, msg: TaskEnded, now: float) -> None:
        key = (msg.user, msg.task)
        if self.ack_ends:
            self.send(msg.server, EndAck(msg.user, msg.task, self.id))
            self.ended.add(key)
        launched = self.launched.pop(key, None)
        if launched is None:
            return  # a repeated notice
        demand = launched[1]
        self.cluster.release(self._index[msg.server], demand)
        self.running[msg.user] -= 1
        if self.running[msg.user]:
            held = tuple(h - d for h, d in zip(self.held[msg.user], demand))
        else:
            held = (0.0,) * len(demand)  # no rounding residue once nothing runs
        self.held[msg.user] = held
        task = self.pending.get(msg.user)
        if task is not None:
            self.pending[msg.user] = dataclasses.replace(task, held=held)

    @handles(UserShare)
    def on_user_share(self, msg: UserShare, now: float) -> None:
        if self.ack_ends and not msg.waiting:
            self.send(msg.user, ShareAck(msg.user, self.id))
        task = self.pending.get(msg.user)
        if task is not None:
            self.pending[msg.user] = dataclasses.replace(task, share=msg.share)
