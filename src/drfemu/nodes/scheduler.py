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

Crashes (issue 16; the failure detector delivers `PeerDown`/`PeerUp`): when a resource node
crashes, its launched tasks are gone (their users' held shares fall) and so are the proposals
reserved on it (an `Accept` for any of them is answered `Forgotten`: the user submits the
task again under a new id, since it may have started and died there unheard); its room is unusable until
it rejoins, empty. When the scheduler itself restarts it knows nothing (`restarted`): it asks
no one, but every live resource node reports what runs on it (`ServerState`, which it
acknowledges); until all have, it allocates nothing, since a task it does not know about may
be running. After that an `Accept` it cannot place is `Forgotten`, and a request for a task
that runs repeats its `Launch` (the node repeats the start to the user). A task answered
`Forgotten` is never placed again — its user submits it under a new id — and a later request
for it gets the same answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drfemu.kernel.events import AllocationBlocked
from drfemu.kernel.messages import (
    Accept,
    Decline,
    EndAck,
    Forgotten,
    Launch,
    PeerDown,
    PeerUp,
    Proposal,
    RequestAck,
    ServerState,
    ShareAck,
    StateAck,
    TaskEnded,
    TaskRequest,
    UserShare,
    handles,
)
from drfemu.kernel.resources import Vector
from drfemu.nodes.actor import Actor
from drfemu.protocols.central import CentralRule, PendingTask
from drfemu.protocols.cluster import ClusterView

__all__ = ["CentralScheduler", "Placed"]

Placed = tuple[int, Vector, tuple[int, ...]]
"""A task the scheduler placed: (server index, demand, the devices it holds there)."""
_UNREPORTED = (-1, ())  # no block: what a restarted scheduler's observers last heard is unknown to it


class CentralScheduler(Actor):
    __slots__ = ("rule", "cluster", "servers", "pending", "proposed", "launched", "ended", "forgotten", "held",
                 "running", "per_tick", "ack_ends", "awaiting", "_arrivals", "_index", "_blocked")

    def __init__(self, actor_id: int, rule: CentralRule, servers: Sequence[int], capacities: Sequence[Vector],
                 per_tick: int = 1, ack_ends: bool = False, restarted: bool = False,
                 down: Sequence[int] = (), device_resource: int = -1) -> None:
        """`restarted`: a later life after a crash, which waits for the live servers' reports
        (`down`: the servers the failure detector says are down now); `device_resource` ≥ 0: that
        resource is modelled as devices (`protocols.devices`)."""
        super().__init__(actor_id)
        self.rule = rule
        self.servers = list(servers)
        self._index = {server: k for k, server in enumerate(self.servers)}
        self.cluster = ClusterView(capacities, device_resource)
        self.pending: dict[int, PendingTask] = {}
        self.proposed: dict[tuple[int, int], Placed] = {}
        self.launched: dict[tuple[int, int], Placed] = {}  # running
        self.ended: set[tuple[int, int]] = set()  # with resilience on (`ack_ends`): so a late request is ignored
        self.forgotten: set[tuple[int, int]] = set()  # tasks answered `Forgotten`: never placed again
        self.ack_ends = ack_ends
        self.held: dict[int, Vector] = {}
        self.running: dict[int, int] = {}
        self.per_tick = per_tick
        self._arrivals = 0
        # the block last reported, (user, pending users) (`AllocationBlocked`); a restarted
        # scheduler does not know what its predecessor reported, so it reports afresh
        self._blocked: tuple[int, tuple[int, ...]] | None = (
            _UNREPORTED if restarted and getattr(rule, "BLOCKING", False) else None)
        for server in down:
            self.cluster.set_down(self._index[server])
        self.awaiting: set[int] = set(self.servers) - set(down) if restarted else set()

    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        key = (msg.user, msg.task)
        if key in self.proposed:
            self.send(msg.user, Proposal(msg.task, self.id))  # the proposal (or the answer) was lost
            return
        launched = self.launched.get(key)
        if launched is not None:
            if self.ack_ends:  # the start notice was lost (or a restart forgot the Accept): ask again
                self.send(self.servers[launched[0]], Launch(msg.user, msg.task, launched[1], launched[2]))
            return
        if key in self.ended:
            return
        if key in self.forgotten:
            self.send(msg.user, Forgotten(msg.task, self.id))  # the first answer may have been lost
            return
        waiting = self.pending.get(msg.user)
        if waiting is not None and waiting.task == msg.task:
            self.pending[msg.user] = dataclasses.replace(waiting, share=msg.share)
            return
        self._arrivals += 1
        if self.ack_ends:  # resilience on: the first arrival is acknowledged (`nodes.server`'s decision)
            self.send(msg.user, RequestAck(msg.task, self.id))
        self.pending[msg.user] = PendingTask(msg.user, msg.task, msg.demand, msg.share, self._arrivals,
                                             self.held.get(msg.user, ()))

    def on_tick(self, now: float) -> None:
        if self.awaiting:
            return  # restarted: some live server has not said what runs on it yet
        started = 0
        while self.pending and (self.per_tick == 0 or started < self.per_tick):
            choice = self.rule.choose(list(self.pending.values()), self.cluster)
            if choice is None:
                self._report_block(now, self._waiting_for())
                return
            self._report_block(now, None)
            task, index = choice
            devices = self.cluster.reserve(index, task.demand)
            del self.pending[task.user]
            self.proposed[(task.user, task.task)] = (index, task.demand, devices)
            self.send(task.user, Proposal(task.task, self.id))
            started += 1

    def _waiting_for(self) -> int | None:
        waiting = getattr(self.rule, "waiting_for", None)
        return waiting() if waiting is not None else None

    def _report_block(self, now: float, user: int | None) -> None:
        """Tell the observers when the user the rule holds allocations back for, or the users
        whose tasks it holds then, change (user None: it holds nothing back). Decision (issue 52):
        the end of a block is reported too, not inferred from the next `TaskAllocated` — an
        allocation proposed before the block may be accepted after it."""
        blocked = None if user is None else (user, tuple(sorted(self.pending)))
        if blocked != self._blocked:
            self.emit(AllocationBlocked(now, None) if blocked is None else AllocationBlocked(now, *blocked))
        self._blocked = blocked

    @handles(Accept)
    def on_accept(self, msg: Accept, now: float) -> None:
        key = (msg.user, msg.task)
        if key not in self.proposed:
            launched = self.launched.get(key)
            if launched is not None:
                self.send(self.servers[launched[0]], Launch(msg.user, msg.task, launched[1], launched[2]))
            elif self.ack_ends and not self.awaiting and key not in self.ended:
                self._forget(key)
            return
        placed = self.proposed.pop(key)
        self.launched[key] = placed
        index, demand, devices = placed
        held = self.held.get(msg.user)
        self.held[msg.user] = demand if held is None else tuple(h + d for h, d in zip(held, demand))
        self.running[msg.user] = self.running.get(msg.user, 0) + 1
        self.send(self.servers[index], Launch(msg.user, msg.task, demand, devices))

    def _forget(self, key: tuple[int, int]) -> None:
        """Tell the user its accepted task cannot be placed (it submits it again under a new id),
        and never place that task afterwards: a request for it that waits here (the user asked
        again while its Accept was on the wire) is dropped, and a later one is answered the same
        way. Else a second proposal could be accepted, and the task launched, after the user had
        given it up on hearing `Forgotten` (found by the stall property test: fifo, a crash that cut
        off a proposal, and latency with jitter that let the answers cross)."""
        self.forgotten.add(key)
        waiting = self.pending.get(key[0])
        if waiting is not None and waiting.task == key[1]:
            del self.pending[key[0]]
        self.send(key[0], Forgotten(key[1], self.id))

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
        self.cluster.release(*launched)
        self._let_go(msg.user, launched[1])

    def _let_go(self, user: int, demand: Vector) -> None:
        """`user` holds `demand` less: one of its tasks ended or died."""
        self.running[user] -= 1
        if self.running[user]:
            held = tuple(h - d for h, d in zip(self.held[user], demand))
        else:
            held = (0.0,) * len(demand)  # no rounding residue once nothing runs
        self.held[user] = held
        task = self.pending.get(user)
        if task is not None:
            self.pending[user] = dataclasses.replace(task, held=held)

    @handles(UserShare)
    def on_user_share(self, msg: UserShare, now: float) -> None:
        if self.ack_ends and not msg.waiting:
            self.send(msg.user, ShareAck(msg.user, self.id))
        task = self.pending.get(msg.user)
        if task is not None:
            self.pending[msg.user] = dataclasses.replace(task, share=msg.share)

    # -- crashes (issue 16) ---------------------------------------------------------------
    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        index = self._index.get(msg.peer)
        if index is None:
            return  # a user or the gateway
        self.awaiting.discard(msg.peer)
        for key in [k for k, placed in self.launched.items() if placed[0] == index]:
            self._let_go(key[0], self.launched.pop(key)[1])
        for key in [k for k, placed in self.proposed.items() if placed[0] == index]:
            del self.proposed[key]
        self.cluster.set_down(index)

    @handles(PeerUp)
    def on_peer_up(self, msg: PeerUp, now: float) -> None:
        index = self._index.get(msg.peer)
        if index is not None:
            self.awaiting.discard(msg.peer)
            self.cluster.set_up(index)

    @handles(ServerState)
    def on_server_state(self, msg: ServerState, now: float) -> None:
        self.send(msg.server, StateAck(msg.server, self.id))
        if msg.server not in self.awaiting:
            return  # a repeated report
        self.awaiting.discard(msg.server)
        index = self._index[msg.server]
        for user, task, demand in msg.running:
            key = (user, task)
            if key in self.ended or key in self.launched:
                continue
            pending = self.pending.get(user)
            if pending is not None and pending.task == task:
                del self.pending[user]  # it asked again, but its task runs
            self.launched[key] = (index, demand, self.cluster.reserve(index, demand))
            held = self.held.get(user)
            self.held[user] = demand if held is None else tuple(h + d for h, d in zip(held, demand))
            self.running[user] = self.running.get(user, 0) + 1
        for user, pending in self.pending.items():
            self.pending[user] = dataclasses.replace(pending, held=self.held.get(user, ()))
