"""What nodes report to the run's observers (`nodes.actor.Actor.emit`).

Events are facts, stamped with the virtual time they happened at. A node never learns who
listens: the runtime publishes them to its subscribers (the harness, the set-up's report).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AllocationBlocked", "NeighborsFixed", "ServerCrashed", "ServerRecovered", "TaskAllocated", "TaskDispatched",
           "TaskFinished", "TaskResubmitted", "TaskSubmitted"]


@dataclass(frozen=True, slots=True)
class TaskAllocated:
    """Task `task` of `user` started on `server` at `time`, taking `demand` (and, in the device
    model, the devices `devices` of the device resource: `protocols.devices`)."""

    time: float
    server: int
    user: int
    task: int
    demand: tuple[float, ...]
    devices: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocationBlocked:
    """From `time` on, the allocator holds every allocation back until `user`'s task fits on some
    server: a blocking rule (C-ADRF, seed 002 Algorithm 1) whose lowest pending user fits
    nowhere; `pending` are the users whose tasks it holds (a user whose task is not among them,
    lost or still on its way, may come lower). `user` None: it holds nothing back any more (it
    allocated again, or it restarted)."""

    time: float
    user: int | None
    pending: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class NeighborsFixed:
    """`server` fixed its neighbour set to `members` at `time` (e.g. ddrf-gradient's freeze)."""

    time: float
    server: int
    members: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TaskSubmitted:
    """`user` submitted task `task` needing `demand` at `time` (it waits at the user)."""

    time: float
    user: int
    task: int
    demand: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class TaskDispatched:
    """`user` sent task `task` out to be placed at `time` (the handshake began)."""

    time: float
    user: int
    task: int


@dataclass(frozen=True, slots=True)
class TaskFinished:
    """Task `task` of `user` ended on `server` at `time`, freeing `demand`."""

    time: float
    server: int
    user: int
    task: int
    demand: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class TaskResubmitted:
    """`user` gave task `task` up at `time` — it was killed with its server, or the allocator or
    proposer handling it crashed — and submitted its demand again as task `again` (-1: an
    endless user, whose next task is that demand anyway)."""

    time: float
    user: int
    task: int
    again: int


@dataclass(frozen=True, slots=True)
class ServerCrashed:
    """Actor `actor` crashed at `time` (published by the run's fault injector; a server's
    running tasks die with it)."""

    time: float
    actor: int


@dataclass(frozen=True, slots=True)
class ServerRecovered:
    """Actor `actor` rejoined, empty, at `time` (published by the run's fault injector)."""

    time: float
    actor: int
