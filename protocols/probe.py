"""Sparrow-like probes (thesis §4.2, Algorithm 4, eq. 4.1; SPEC §4 `probe`).

The gateway sends each task to a uniformly random server. That server stores it and
forwards a copy to the `d` (default 2) of its fixed neighbours with the lowest CPU load
(eq. 4.1, `CPU used / CPU capacity`, as last polled); a forwarded copy is stored, not
forwarded again. Every tick each server polls its neighbours' loads and proposes the stored
task with the lowest carried `G_i` that fits on it (ties: lower user id, then earlier task).
The user accepts the first proposal for its current task and declines the others, and a
declined server drops the copy and frees its reservation.

`--probe-load` says what "load" is. `cpu` is eq. 4.1, the thesis's. `dominant` uses every
resource: a server reports its used fraction of each resource (a resource it does not have
counts as full), and a task is forwarded to the neighbours whose load *for that task* — the
largest used fraction over the resources the task demands — is lowest. So a GPU task is not
sent to servers without GPUs, and a memory-heavy task avoids servers whose memory is taken
while their CPU is idle. `room` (ours) goes one step further and ranks neighbours by how much
of their *free* room the task would take (`demand / free`, largest over the resources it
demands): a fraction says nothing of absolute room, and a small machine at 60 % can have less
room than a large one at 90 %; a neighbour where the task does not fit ranks last.

Decisions, following the thesis: neighbours are a fixed random graph of out-degree `P`; a
server only ever places on itself. Ties in load go to the neighbour listed first.

**Tasks probed again** (`--probe-retry`, issue 38). In the thesis's probe (`--probe-retry 0`,
kept for the reproduction) a copy waits where it was sent, so a task whose three copies sit on
full servers is never placed (the thesis's "that task and user cannot allocate a task
anymore"), and every such run ends as stalled: on Google 100 × 20, at 0.12–0.31 of DRF's
minimum share while 11–60 servers had room; on GPU clusters most stuck copies were GPU tasks
on servers with no GPU at all. By default (`--probe-retry 10`) two things change:
- a server never keeps a copy its *capacity* could never hold (it still forwards the copies
  of a task the gateway sent it); such copies went to servers without the task's resource;
- a user whose task has had no proposal `probe_retry` ticks after it was sent asks the
  gateway again, and the task goes to a new random server, which forwards it as before
  (`nodes.user`, `reprobe`). Earlier copies stay where they are; a server keeps one copy per
  user, so a re-probe adds no state, and a late proposal from an old copy is declined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from drfemu.protocols.errors import InputError
from drfemu.protocols.messages import TaskRequest, handles, message
from drfemu.protocols.params import Kind, Param
from drfemu.protocols.resources import Vector, fits
from drfemu.protocols.rule import Server, ServerRule

__all__ = ["LoadReply", "LoadRequest", "LoadsReply", "ProbeRule", "ProbeTask", "room_load", "task_load",
           "used_fractions"]


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


@message
class LoadsReply:
    """A server's used fraction and free amount of every resource (`--probe-load dominant|room`)."""

    sender: int
    used: tuple[float, ...]
    free: tuple[float, ...]
    WIRE: ClassVar[tuple[Any, ...]] = (0, 1, "used", 1, 0, "free", 1, 0)


def cpu_load(server: Server) -> float:
    """Eq. 4.1 on the first resource (CPU)."""
    return 1.0 - server.free[0] / server.capacity[0] if server.capacity[0] > 0 else 1.0


def used_fractions(free: Vector | list[float], capacity: Vector) -> tuple[float, ...]:
    """The used fraction of each resource; a resource the server does not have counts as full."""
    return tuple(1.0 - f / c if c > 0 else 1.0 for f, c in zip(free, capacity))


def task_load(used: tuple[float, ...], demand: Vector) -> float:
    """A server's load for a task: its largest used fraction over the resources the task demands."""
    return max((u for u, d in zip(used, demand) if d > 0), default=0.0)


def room_load(free: tuple[float, ...], demand: Vector) -> float:
    """How much of a server's free room a task would take: the largest `demand / free` over the
    resources it demands (above 1: it does not fit; `inf` where nothing of one is free)."""
    return max((d / f if f > 0 else math.inf for d, f in zip(demand, free) if d > 0), default=0.0)


LOADS: dict[str, Callable[[Any, Vector], float]] = {
    "cpu": lambda report, demand: report.load,
    "dominant": lambda report, demand: task_load(report.used, demand),
    "room": lambda report, demand: room_load(report.free, demand),
}
"""A neighbour's load for a task under each `--probe-load`, from its last report."""


class ProbeRule(ServerRule):
    """A probe server's rule; the server's fixed random `neighbors` are its probe targets."""

    PARAMS = (Param("probe_d", Kind.INT, 2, "probe: neighbours a task is forwarded to (at most --neighbors).", ge=1,
                    echo="probe_d"),
              Param("probe_load", Kind.TEXT, "cpu", "probe: a server's load, cpu (eq. 4.1), dominant (the largest used "
                    "fraction the task demands) or room (the share of free room the task takes).",
                    choices=tuple(LOADS), echo="probe_load"),
              Param("probe_retry", Kind.INT, 10, "probe: ticks a server holds a copy it has no room for before "
                    "passing it to a random server (0: never, the thesis's probe).", ge=0, le=10**9, unit="ticks",
                    echo="probe_retry_ticks"))
    TICKS_ALL = True
    STRANDS = True  # with --probe-retry 0 (the thesis's probe) copies on full servers wait for ever

    __slots__ = ("d", "mode", "retry", "reports", "stored")

    @staticmethod
    def check_params(values: Mapping[str, Any]) -> None:
        """A task is forwarded to `d` of `P` neighbours, so `d` cannot exceed `P`."""
        if values["probe_d"] > values["neighbors"]:
            raise InputError(f"--probe-d ({values['probe_d']}) must be at most --neighbors ({values['neighbors']})")

    def __init__(self, probe_d: int = 2, probe_load: str = "cpu", probe_retry: int = 10) -> None:
        self.d = probe_d
        self.mode = probe_load
        self.retry = probe_retry  # the users read it (`reprobe`); here: 0 keeps every copy, as the thesis
        self.reports: dict[int, LoadReply | LoadsReply] = {}  # neighbour -> its last load report
        self.stored: dict[int, tuple[int, float, Vector]] = {}  # user -> (task, share, demand) of its latest task

    def start(self, server: Server) -> None:
        """Before the first poll every neighbour counts as idle."""
        m = len(server.capacity)
        self.reports = {n: LoadReply(n, 0.0) if self.mode == "cpu" else LoadsReply(n, (0.0,) * m, (math.inf,) * m)
                        for n in server.neighbors}

    def _store(self, user: int, task: int, share: float, demand: Vector) -> None:
        """Keep a copy of `user`'s task; a newer task of the user replaces an older copy, which is
        dead (a user has one task at a time: it sent a newer one because the older one started)."""
        held = self.stored.get(user)
        if held is None or held[0] < task:
            self.stored[user] = (task, share, demand)

    def _could_hold(self, server: Server, demand: Vector) -> bool:
        """Could this server ever hold the task (always, in the thesis's probe)?"""
        return not self.retry or fits(demand, server.capacity, server.capacity)

    @handles(TaskRequest)
    def on_task_request(self, server: Server, msg: TaskRequest, now: float) -> None:
        if self._could_hold(server, msg.demand):
            self._store(msg.user, msg.task, msg.share, msg.demand)
        load, reports, demand = LOADS[self.mode], self.reports, msg.demand
        lightest = sorted(server.neighbors, key=lambda n: load(reports[n], demand))[: self.d]
        copy = ProbeTask(msg.user, msg.task, msg.demand, msg.share)
        for neighbour in lightest:
            server.send(neighbour, copy)

    @handles(ProbeTask)
    def on_probe_task(self, server: Server, msg: ProbeTask, now: float) -> None:
        if self._could_hold(server, msg.demand):
            self._store(msg.user, msg.task, msg.share, msg.demand)

    def on_tick(self, server: Server, now: float) -> None:
        poll = LoadRequest(server.id)
        for neighbour in server.neighbors:
            server.send(neighbour, poll)
        if not self.stored:
            return
        stored = self.stored
        for user in sorted(stored, key=lambda u: (stored[u][1], u, stored[u][0])):
            task, _, demand = stored[user]
            if server.fits(demand):
                del stored[user]
                server.propose(user, task, demand)
                return

    @handles(LoadRequest)
    def on_load_request(self, server: Server, msg: LoadRequest, now: float) -> None:
        if self.mode != "cpu":
            server.send(msg.sender, LoadsReply(server.id, used_fractions(server.free, server.capacity),
                                               tuple(server.free)))
        else:
            server.send(msg.sender, LoadReply(server.id, cpu_load(server)))

    @handles(LoadReply, LoadsReply)
    def on_load_reply(self, server: Server, msg: LoadReply | LoadsReply, now: float) -> None:
        self.reports[msg.sender] = msg
