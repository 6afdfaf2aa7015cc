"""What nodes report to the run's observers (`nodes.actor.Actor.emit`).

Events are facts, stamped with the virtual time they happened at. A node never learns who
listens: the runtime publishes them to its subscribers (the harness, the set-up's report).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NeighborsFixed", "TaskAllocated"]


@dataclass(frozen=True, slots=True)
class TaskAllocated:
    """Task `task` of `user` started on `server` at `time`, taking `demand`."""

    time: float
    server: int
    user: int
    task: int
    demand: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class NeighborsFixed:
    """`server` fixed its neighbour set to `members` at `time` (e.g. ddrf-gradient's freeze)."""

    time: float
    server: int
    members: tuple[int, ...]
