"""Centralised DRF (DRFH) with first-fit, best-fit, least-fragmentation or keep-room placement (SPEC §4:
`drf`, `drf-bestfit`; issue 38: `drf --placement min-fragmentation`; issue 60: `keep-room`).

Each tick: among users with a pending task, the lowest reported `G_i` — ties to the lowest
user id — whose task fits on some server; placed first-fit over servers in their fixed order
(thesis §4.1), by the DRFH best-fit heuristic (thesis §2.1.4), where it adds the least
fragmentation (`protocols.fragmentation`) or where it costs the least room (`protocols.room`,
issue 60) for the demand mix of the tasks pending at the
scheduler (decision: every user with a task waiting counts once; a waiting task that fits
nowhere adds the same to every server and changes no choice). A user whose task fits nowhere
is skipped, not waited for, so it cannot block the others. `--placement in-order` (the walks'
first-fit in the cluster's order, issue 60) is first-fit here: a central scheduler sees every
server. `drf-bestfit` is `drf --placement best-fit` under its own name (the thesis's E7 runs it so).
"""

from __future__ import annotations

from collections.abc import Sequence

from drfemu.kernel.params import Param
from drfemu.protocols.central import PER_TICK, PendingTask
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.placement import BEST_FIT, FIRST_FIT, IN_ORDER, KEEP_ROOM, PLACEMENT, SCORED_BY_MIX
from drfemu.protocols.room import keep_room
from drfemu.protocols.spec import Gateway, ProtocolSpec

__all__ = ["DRF", "DRF_BESTFIT", "Drf", "DrfBestFit"]


def _by_share(pending: Sequence[PendingTask]) -> list[PendingTask]:
    return sorted(pending, key=lambda t: (t.share, t.user))


class Drf:
    """DRF order; first-fit placement unless `placement` says otherwise."""

    PARAMS: tuple[Param, ...] = (PER_TICK, PLACEMENT)

    def __init__(self, placement: str = FIRST_FIT) -> None:
        self.placement = placement

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        mix = [t.demand for t in pending] if self.placement in SCORED_BY_MIX else None
        for task in _by_share(pending):
            if self.placement == FIRST_FIT or self.placement == IN_ORDER:
                server = cluster.first_fit(task.demand, key=task.user)
            elif mix is not None and self.placement == KEEP_ROOM:
                server = keep_room(task.demand, cluster.free, cluster.capacity, mix, cluster.scale, cluster.devices)
            elif mix is not None:
                server = cluster.least_fragmentation(task.demand, mix)
            else:
                server = cluster.best_fit(task.demand)
            if server >= 0:
                return task, server
        return None


class DrfBestFit(Drf):
    """DRF order, DRFH best-fit placement (`drf-bestfit`)."""

    PARAMS = (PER_TICK,)

    def __init__(self) -> None:
        super().__init__(BEST_FIT)


DRF = ProtocolSpec("drf", "central DRF, first-fit placement (--placement: best-fit, min-fragmentation)",
                   Gateway.CENTRAL, central_rule=Drf)
DRF_BESTFIT = ProtocolSpec("drf-bestfit", "central DRF, DRFH best-fit placement", Gateway.CENTRAL,
                           central_rule=DrfBestFit)
