"""The online, non-preemptive job simulator (seed 002 §VI-B), driven by the Google 2011 trace.

Jobs arrive at their SUBMIT time and, once started by the rule (`protocols.policies.online`),
run for the trace's run time (`end − schedule` of `jobs_first_hour.csv.gz`). Time is
virtual: a heap of arrivals and completions, all events of one instant applied before the
rule is asked once (completions first). Every `sample_every` seconds (700 s, as the seed)
the simulator records the users present (a queued or running job), each one's dominant
share x_i of its running jobs, and its demand — decision: the demand of its latest submitted
job, since a user's tasks need not share one request. `online_experiment` compares every
sample with the SWM optimum for the same users and pool.

Decision on the pool: the seed does not give its size. The default is a fraction (0.8) of
the mean CPU and memory that the first hour's jobs would hold if each started on arrival, so
the pool is loaded beyond capacity and the rules' choices matter; `capacity` overrides it.
"""

from __future__ import annotations

import csv
import gzip
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from protocols.policies.online import OnlineScheduler

__all__ = ["Job", "Sample", "SimResult", "describe", "load_first_hour_jobs", "offered_load", "relative_rmse",
           "sample_rmse", "simulate"]


@dataclass(frozen=True, slots=True)
class Job:
    user: int
    submit: float
    runtime: float
    demand: tuple[float, float]


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


def load_first_hour_jobs() -> tuple[list[Job], list[str]]:
    """The shipped first-hour jobs and the users' (shortened) names, users in arrival order."""
    source = resources.files("experiments.data.google2011") / "jobs_first_hour.csv.gz"
    with source.open("rb") as raw, gzip.open(raw, "rt", newline="") as text:
        rows = list(csv.DictReader(text))
    names: dict[str, int] = {}
    jobs = []
    for row in rows:
        user = names.setdefault(row["user"], len(names))
        jobs.append(Job(user, float(row["submit"]), float(row["end"]) - float(row["schedule"]),
                        (float(row["cpu"]), float(row["mem"]))))
    return jobs, list(names)


def offered_load(jobs: Sequence[Job], horizon: float = 3600.0) -> tuple[float, float]:
    """Mean CPU and memory held over [0, horizon) if every job started on arrival."""
    events = sorted([(j.submit, j.demand) for j in jobs] + [(j.submit + j.runtime, (-j.demand[0], -j.demand[1]))
                                                           for j in jobs])
    held, area, last = [0.0, 0.0], [0.0, 0.0], 0.0
    for t, (cpu, mem) in events:
        t = min(t, horizon)
        area = [a + h * (t - last) for a, h in zip(area, held)]
        last = t
        held = [held[0] + cpu, held[1] + mem]
    return area[0] / horizon, area[1] / horizon


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


def relative_rmse(shares: Sequence[float], optimum: Sequence[float]) -> float:
    """sqrt(mean(((x − x̂) / x̂)²)) of seed 002 §VI-B."""
    return math.sqrt(math.fsum(((x - o) / o) ** 2 for x, o in zip(shares, optimum)) / len(shares))


def sample_rmse(sample: Sample, capacity: Sequence[float], alpha: float, capped: bool = True) -> float:
    from protocols.policies.adrf import swm

    _, optimum = swm(capacity, sample.demands, alpha, sample.wanted if capped else None)
    return relative_rmse(sample.shares, optimum)


def describe(result: SimResult) -> dict[str, Any]:
    delays = sorted(result.delays)
    return {"rule": result.rule, "jobs": len(delays), "makespan_s": result.makespan,
            "median_delay_s": delays[len(delays) // 2], "p90_delay_s": delays[int(0.9 * (len(delays) - 1))],
            "mean_delay_s": math.fsum(delays) / len(delays), "samples": len(result.samples)}
