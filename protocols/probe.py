"""Sparrow-like probes (thesis §4.2, Algorithm 4, eq. 4.1; SPEC §4 `probe`).

The gateway sends each task to a uniformly random server. That server stores it and
forwards a copy to the `d` (default 2) of its fixed neighbours with the lowest CPU load
(eq. 4.1, `CPU used / CPU capacity`, as last polled); a forwarded copy is stored, not
forwarded again. Every tick each server polls its neighbours' loads and proposes the stored
task with the lowest carried `G_i` that fits on it (ties: lower user id, then earlier task).
The user accepts the first proposal for its current task and declines the others, and a
declined server drops the copy and frees its reservation.

Decisions, following the thesis: neighbours are a fixed random graph of out-degree `P`; a
server only ever places on itself — probes have no random walk, so a task whose three copies
sit on full servers is never placed (the thesis's "that task and user cannot allocate a task
anymore") and such a run ends as stalled. Ties in load go to the neighbour listed first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from nodes.actor import handles
from nodes.messages import TaskRequest, message
from nodes.server import AllocatingServer
from protocols.resources import Vector

__all__ = ["LoadReply", "LoadRequest", "ProbeServer", "ProbeTask"]


@message
class ProbeTask:
    """A copy of a user's task forwarded to a lightly loaded neighbour."""

    user: int
    task: int
    demand: tuple[float, ...]
    share: float
    WIRE: ClassVar[tuple[int, int, str, int, int]] = (2, 1, "demand", 1, 0)


@message
class LoadRequest:
    """Asks a neighbour for its CPU load."""

    sender: int
    WIRE: ClassVar[tuple[int, int]] = (0, 1)


@message
class LoadReply:
    """A server's CPU load (eq. 4.1)."""

    sender: int
    load: float
    WIRE: ClassVar[tuple[int, int]] = (1, 1)


class ProbeServer(AllocatingServer):
    """A probe server; `neighbours` (fixed, random) is set by the runner."""

    __slots__ = ("d", "loads", "stored")

    def __init__(self, *args: object, probe_d: int = 2, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.d = probe_d
        self.loads: dict[int, float] = {}
        self.stored: dict[tuple[int, int], tuple[float, Vector]] = {}  # (user, task) -> (share, demand)

    def set_neighbours(self, neighbours: Iterable[int]) -> None:
        super().set_neighbours(neighbours)
        self.loads = {n: 0.0 for n in self.neighbours}

    def load(self) -> float:
        """Eq. 4.1 on the first resource (CPU)."""
        return 1.0 - self.free[0] / self.capacity[0] if self.capacity[0] > 0 else 1.0

    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        self.stored[(msg.user, msg.task)] = (msg.share, msg.demand)
        loads = self.loads
        lightest = sorted(self.neighbours, key=loads.__getitem__)[: self.d]
        copy = ProbeTask(msg.user, msg.task, msg.demand, msg.share)
        for neighbour in lightest:
            self.send(neighbour, copy)

    @handles(ProbeTask)
    def on_probe_task(self, msg: ProbeTask, now: float) -> None:
        self.stored[(msg.user, msg.task)] = (msg.share, msg.demand)

    def on_tick(self, now: float) -> None:
        poll = LoadRequest(self.id)
        for neighbour in self.neighbours:
            self.send(neighbour, poll)
        if not self.stored:
            return
        for key in sorted(self.stored, key=lambda k: (self.stored[k][0], k)):
            demand = self.stored[key][1]
            if self.fits(demand):
                del self.stored[key]
                self.propose(key[0], key[1], demand)
                return

    @handles(LoadRequest)
    def on_load_request(self, msg: LoadRequest, now: float) -> None:
        self.send(msg.sender, LoadReply(self.id, self.load()))

    @handles(LoadReply)
    def on_load_reply(self, msg: LoadReply, now: float) -> None:
        self.loads[msg.sender] = msg.load
