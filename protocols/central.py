"""What a central allocation rule sees and decides (SPEC §4, thesis §4.1).

A central rule is pure: given the pending tasks (at most one per user, with the `G_i` the
user reported and the order they arrived in) and the scheduler's `ClusterView`, it returns the
task to place this tick and the server to place it on, or `None` when nothing fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from protocols.cluster import ClusterView
from protocols.resources import Vector

__all__ = ["CentralRule", "PendingTask"]


@dataclass(frozen=True, slots=True)
class PendingTask:
    """A task waiting at the central scheduler; `arrival` orders tasks by submission."""

    user: int
    task: int
    demand: Vector
    share: float
    arrival: int


class CentralRule(Protocol):
    """Chooses at most one (task, server) per allocation tick."""

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None: ...
