"""Centralised FIFO (SPEC §4: `fifo`): tasks in the order they reached the scheduler, placed
first-fit. The thesis's no-fairness baseline (§4.1) skips a task that fits nowhere for the
next one; `--head-of-line` waits for it instead (seed 002's FIFO, which starts nothing while
the oldest task does not fit)."""

from __future__ import annotations

from collections.abc import Sequence

from drfemu.kernel.params import Kind, Param
from drfemu.protocols.central import PER_TICK, PendingTask
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.spec import Gateway, ProtocolSpec

__all__ = ["FIFO", "HEAD_OF_LINE", "Fifo"]

HEAD_OF_LINE = Param("head_of_line", Kind.BOOL, False, "fifo: wait for the oldest task to fit instead of skipping "
                     "it (seed 002's FIFO).", echo="head_of_line")


class Fifo:
    """Arrival order, first-fit placement."""

    PARAMS = (PER_TICK, HEAD_OF_LINE)

    def __init__(self, head_of_line: bool = False) -> None:
        self.head_of_line = head_of_line

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        for task in sorted(pending, key=lambda t: t.arrival):
            server = cluster.first_fit(task.demand, key=task.user)
            if server >= 0:
                return task, server
            if self.head_of_line:
                return None
        return None


FIFO = ProtocolSpec("fifo", "central FIFO, first-fit placement", Gateway.CENTRAL, central_rule=Fifo)
