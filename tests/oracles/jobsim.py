"""A test oracle: seed 002's online, non-preemptive job simulator on one pool (§VI-B).

Until issue 15 this drove `drfemu experiment online`; the emulator now replays the trace with
the same rules as central protocols (`protocols.online_central`), and this stays as an
independent implementation to check it against. Jobs arrive at their submit time and, once
started by the rule (`policies.online.OnlineScheduler`), run for their run time.
Time is virtual: a heap of arrivals and completions, all events of one instant applied before
the rule is asked once (completions first), and every job the rule allows starts at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from drfemu.policies.online import OnlineScheduler
from drfemu.workloads.online import TraceTask as Job  # (user, submit, runtime, demand)

__all__ = ["Job", "Sample", "SimResult", "simulate"]


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    users: tuple[int, ...]
    shares: tuple[float, ...]
    demands: tuple[tuple[float, float], ...]
    wanted: tuple[float, ...]  # dominant share with every present job of the user running


@dataclass
class SimResult:
    rule: str
    capacity: tuple[float, float]
    delays: list[float] = field(default_factory=list)  # per job, start − submit
    samples: list[Sample] = field(default_factory=list)
    makespan: float = 0.0


def simulate(jobs: Sequence[Job], rule: str, capacity: Sequence[float], alpha: float = 1.0, beta: str = "d-max",
             sample_every: float = 700.0) -> SimResult:
    """Run every job under `rule` to completion; samples every `sample_every` s until the last ends."""
    scheduler = OnlineScheduler(rule, capacity, alpha, beta)
    result = SimResult(rule, (float(capacity[0]), float(capacity[1])))
    started_at: dict[int, float] = {}
    # (time, 0 = completion / 1 = arrival, sequence, job)
    events = [(job.submit, 1, k, k) for k, job in enumerate(jobs)]
    heapq.heapify(events)
    next_sample, sequence = sample_every, len(jobs)
    while events:
        now = events[0][0]
        while next_sample < now:
            result.samples.append(_sample(scheduler, next_sample))
            next_sample += sample_every
        while events and events[0][0] == now:
            _, kind, _, k = heapq.heappop(events)
            if kind == 0:
                scheduler.finish(k)
            else:
                scheduler.submit(k, jobs[k].user, jobs[k].demand)
        for k in scheduler.schedule():
            started_at[k] = now
            heapq.heappush(events, (now + jobs[k].runtime, 0, sequence, k))
            sequence += 1
        result.makespan = now
    if len(started_at) != len(jobs):
        raise RuntimeError(f"{len(jobs) - len(started_at)} jobs never started under {rule}")
    result.delays = [started_at[k] - job.submit for k, job in enumerate(jobs)]
    return result


def _sample(scheduler: OnlineScheduler, time: float) -> Sample:
    users = tuple(scheduler.present())
    return Sample(time, users, tuple(scheduler.dominant_share(u) for u in users),
                  tuple(scheduler.latest[u] for u in users),  # type: ignore[misc]
                  tuple(scheduler.wanted(u) for u in users))


