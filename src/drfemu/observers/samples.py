"""Samples of a run over time, for its page and for notebooks (`RunResult.samples`).

The `Sampler` reads the harness and the network at allocation ticks — never a node — so a run
that is sampled is the same run, event for event, as one that is not (a tick hook runs after the
tick and sends nothing). It keeps at most `2 · points` samples: it starts with every tick, and
each time it holds `2 · points` it drops every other one and samples half as often, so a run of
any length keeps between `points` and `2 · points` samples, evenly spaced, plus one at its end.

Each sample holds: the time; every user's dominant share and the minimum (the placeable users'
for endless users, those present for tasks that end); the allocations so far; the utilisation of
each resource; the messages sent so far, by type; with tasks that end, the tasks waiting and
running; the tasks started so far and the sum of their queueing delays (`observers.ledger`), from
which a page draws the mean delay of the tasks started in each window; for gradient protocols, the fraction of servers whose gradient view is their ideal one.
Beside the samples: each endless user's share under DRF on the cluster taken as one pool with
divisible tasks (`policies.drf_filling.drf_divisible`), the reference a page draws each user
against. Decision: that reference, not a central run's, because it needs no second run and is the
bound every placement approaches (a central `drf` run's shares are its own samples).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from drfemu.nodes.network import TrafficTally
from drfemu.observers.observer import RunEnd
from drfemu.policies.drf_filling import drf_divisible
from drfemu.policies.pool import PolicyInputError
from drfemu.schema.result import SampleTable, Samples, Section
from drfemu.schema.workload import Workload

__all__ = ["DEFAULT_POINTS", "MAX_POINTS", "Sampled", "Sampler"]

DEFAULT_POINTS = 500
"""Samples a page's run keeps at least (and at most twice as many), unless told otherwise."""

MAX_POINTS = 100_000
"""The most `points` a run may be asked to keep."""


class Sampled(Protocol):
    """What the sampler reads of a harness (`observers.harness`, `observers.finite_harness`)."""

    @property
    def allocations(self) -> int:
        """Tasks started so far."""

    def min_share(self) -> float:
        """The lowest dominant share now (nan when no user counts)."""

    def utilization(self) -> list[float]:
        """Per resource, the used fraction of the cluster now."""

    def share_list(self) -> list[float]:
        """Every user's dominant share now, in workload order."""

    def queue(self) -> tuple[int, int] | None:
        """With tasks that end, the tasks waiting and running now; else None."""


def _number(x: float) -> float | None:
    return x if math.isfinite(x) else None


class Sampler:
    """Samples a run at its allocation ticks, at most `2 · points` kept (see the module)."""

    def __init__(self, workload: Workload, harness: Sampled, traffic: Callable[[], Mapping[str, TrafficTally]],
                 points: int = DEFAULT_POINTS, ideal_views: Callable[[], float] | None = None,
                 delays: Sequence[float] = ()) -> None:
        """`delays`: the queueing delays of the tasks started so far, in start order, as the ledger
        appends them (read, never changed)."""
        if not 1 <= points <= MAX_POINTS:
            raise ValueError(f"a run keeps 1 to {MAX_POINTS:,} samples, not {points}")
        self.harness = harness
        self.traffic = traffic
        self.points = points
        self.ideal_views = ideal_views
        self.users = [u.id for u in workload.users]
        self.resources = list(workload.resources)
        self.reference = None if workload.finite else _drf_reference(workload)
        self.stride = 1
        self.time: list[float] = []
        self.min_share: list[float | None] = []
        self.allocations: list[int] = []
        self.shares: list[list[float]] = []
        self.utilization: list[list[float]] = []
        self.messages: list[dict[str, int]] = []
        self.queue: list[tuple[int, int]] = []
        self.ideal: list[float | None] = []
        self.delays = delays
        self._counted = 0
        self._delay_total = 0.0
        self.started: list[int] = []
        self.delay_total: list[float] = []

    def on_tick(self, now: float, tick: int) -> None:
        """Take a sample every `stride`-th tick from the first (ticks 1, 1 + stride, …: those a thinning
        keeps stay evenly spaced with those taken after it); thin them when there are `2 · points`."""
        if (tick - 1) % self.stride:
            return
        self.take(now)
        if len(self.time) >= 2 * self.points:
            self._thin()

    def take(self, now: float) -> None:
        """Sample the run as it stands at `now`."""
        harness = self.harness
        self.time.append(now)
        self.min_share.append(_number(harness.min_share()))
        self.allocations.append(harness.allocations)
        self.shares.append(harness.share_list())
        self.utilization.append(harness.utilization())
        self.messages.append({name: t.sent for name, t in self.traffic().items()})
        queue = harness.queue()
        if queue is not None:
            self.queue.append(queue)
        count = len(self.delays)
        self._delay_total += math.fsum(self.delays[self._counted:count])
        self._counted = count
        self.started.append(count)
        self.delay_total.append(self._delay_total)
        if self.ideal_views is not None:
            self.ideal.append(_number(self.ideal_views()))

    def _thin(self) -> None:
        for series in (self.time, self.min_share, self.allocations, self.shares, self.utilization, self.messages,
                       self.queue, self.ideal, self.started, self.delay_total):
            del series[1::2]
        self.stride *= 2

    def sections(self, end: RunEnd) -> list[Section]:
        """The samples, the run's end last, as the result's `samples`."""
        if not self.time or self.time[-1] < end.now:
            self.take(end.now)  # the state the run ended in
        types = sorted({name for sample in self.messages for name in sample})
        table = SampleTable(
            every_ticks=self.stride, time_s=list(self.time), min_share=list(self.min_share),
            allocations=list(self.allocations),
            dominant_shares={user: [_number(s[k]) for s in self.shares] for k, user in enumerate(self.users)},
            drf_reference=self.reference,
            utilization={name: [_number(u[r]) for u in self.utilization] for r, name in enumerate(self.resources)},
            messages={name: [sample.get(name, 0) for sample in self.messages] for name in types},
            waiting=[q[0] for q in self.queue] if self.queue else None,
            running=[q[1] for q in self.queue] if self.queue else None,
            started=list(self.started), delay_total_s=list(self.delay_total),
            ideal_view_fraction=list(self.ideal) if self.ideal_views is not None else None)
        return [Samples(samples=table)]


def _drf_reference(workload: Workload) -> dict[str, float | None] | None:
    """Each user's share under divisible DRF on the whole cluster as one pool (None if it has none)."""
    total = [sum(s.capacity[r] for s in workload.servers) for r in range(len(workload.resources))]
    try:
        shares = drf_divisible(total, [u.demand for u in workload.users]).dominant_shares
    except PolicyInputError:
        return None
    return {u.id: _number(s) for u, s in zip(workload.users, shares)}
