"""Putting the events of a live run's workers back into the order their nodes made them.

Each worker's events reach the coordinator in that worker's time order (its runtime never
hands a handler a time before one already handed out, and TCP keeps order), but two
workers' streams interleave as their frames happen to arrive: a user's submission made on
one worker can reach the coordinator after the allocation of that task made on another. The
harness and the ledger judge events in the order they are given, so the coordinator gives
them in node-time order: an event is released once every worker has been heard at a time
after it (by an event or a clock frame), when nothing still on its way can come before it.
Equal times keep their arrival order. Across hosts, node times include the offset between
the hosts' clocks.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

__all__ = ["EventMerge"]


class EventMerge:
    """A k-way merge of the workers' event streams by protocol time, released behind a horizon."""

    __slots__ = ("_heard", "_heap", "_seq", "_latest", "out_of_order")

    def __init__(self, workers: Iterable[int]) -> None:
        self._heard = {worker: -math.inf for worker in workers}
        self._heap: list[tuple[float, int, Any]] = []
        self._seq = 0
        self._latest = -math.inf
        self.out_of_order = 0  # events that arrived after an event of a later time: what the merge put right

    def push(self, worker: int, time: float, event: Any) -> None:
        """`worker`'s next event, made at protocol time `time`."""
        if time > self._heard[worker]:
            self._heard[worker] = time
        if time < self._latest:
            self.out_of_order += 1
        else:
            self._latest = time
        heapq.heappush(self._heap, (time, self._seq, event))
        self._seq += 1

    def clock(self, worker: int, time: float) -> None:
        """`worker` will send no event before `time`."""
        if time > self._heard[worker]:
            self._heard[worker] = time

    def horizon(self) -> float:
        """Every event before this time has arrived."""
        return min(self._heard.values())

    def pop_through(self, time: float) -> list[Any]:
        """The held events at or before `time`, in order; call only with `time < horizon()`."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= time:
            out.append(heapq.heappop(heap)[2])
        return out

    def pop_ready(self) -> list[Any]:
        """The held events before the horizon, in order."""
        horizon = self.horizon()
        out = []
        heap = self._heap
        while heap and heap[0][0] < horizon:
            out.append(heapq.heappop(heap)[2])
        return out
