"""Centralised DRF (DRFH) with first-fit or best-fit placement (SPEC §4: `drf`, `drf-bestfit`).

Each tick: among users with a pending task, the lowest reported `G_i` — ties to the lowest
user id — whose task fits on some server; placed first-fit over servers in their fixed order
(thesis §4.1), or by the DRFH best-fit heuristic (thesis §2.1.4). A user whose task fits
nowhere is skipped, not waited for, so it cannot block the others.
"""

from __future__ import annotations

from collections.abc import Sequence

from drfemu.protocols.central import PER_TICK, PendingTask
from drfemu.protocols.cluster import ClusterView

__all__ = ["DrfBestFit", "DrfFirstFit"]


def _by_share(pending: Sequence[PendingTask]) -> list[PendingTask]:
    return sorted(pending, key=lambda t: (t.share, t.user))


class DrfFirstFit:
    """DRF order, first-fit placement."""

    PARAMS = (PER_TICK,)

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        for task in _by_share(pending):
            server = cluster.first_fit(task.demand, key=task.user)
            if server >= 0:
                return task, server
        return None


class DrfBestFit:
    """DRF order, DRFH best-fit placement."""

    PARAMS = (PER_TICK,)

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        for task in _by_share(pending):
            server = cluster.best_fit(task.demand)
            if server >= 0:
                return task, server
        return None
