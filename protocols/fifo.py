"""Centralised FIFO (SPEC §4: `fifo`): each tick, the earliest-submitted pending task that
fits anywhere, placed first-fit. The thesis's no-fairness baseline (§4.1)."""

from __future__ import annotations

from collections.abc import Sequence

from protocols.central import PendingTask
from protocols.cluster import ClusterView

__all__ = ["Fifo"]


class Fifo:
    """Arrival order, first-fit placement."""

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        for task in sorted(pending, key=lambda t: t.arrival):
            server = cluster.first_fit(task.demand, key=task.user)
            if server >= 0:
                return task, server
        return None
