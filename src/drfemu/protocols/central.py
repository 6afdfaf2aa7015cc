"""What a central allocation rule sees and decides (SPEC §4, thesis §4.1).

A central rule is pure: given the pending tasks (at most one per user, with the `G_i` the
user reported, what the user's running tasks hold as the scheduler counts them, and the order
the tasks arrived in) and the scheduler's `ClusterView`, it returns the task to place and the
server to place it on, or `None` when it places nothing more this tick. The scheduler asks
again, with the chosen task gone, up to `allocations_per_tick` times a tick (the thesis: once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from drfemu.kernel.params import Kind, Param
from drfemu.kernel.resources import Vector
from drfemu.protocols.cluster import ClusterView

__all__ = ["CentralRule", "PER_TICK", "PendingTask"]

PER_TICK = Param("allocations_per_tick", Kind.INT, 1, "Central protocols: tasks the scheduler may start per tick "
                 "(1: the thesis; 0: as many as its rule allows, like a batch allocator).", ge=0, le=10**9,
                 unit="tasks", echo="allocations_per_tick")


@dataclass(frozen=True, slots=True)
class PendingTask:
    """A task waiting at the central scheduler; `arrival` orders tasks by submission."""

    user: int
    task: int
    demand: Vector
    share: float
    arrival: int
    held: Vector = ()  # what the user's running tasks hold, counted by the scheduler


class CentralRule(Protocol):
    """Chooses the next (task, server) to start, or None. Its class lists its run parameters
    in `PARAMS` (every central rule reads `PER_TICK`; the scheduler applies it). A blocking rule
    (C-ADRF) also has `waiting_for() -> int | None`: after `choose` gave None, the user whose task
    it holds every allocation back for, which the scheduler reports (`AllocationBlocked`)."""

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None: ...
