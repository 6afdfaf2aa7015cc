"""The trace's own arrivals: a finite workload replaying the Google 2011 first hour (issue 15).

`online_case(minutes=60, load_fraction=0.8, machines=None, seed=1)` keeps every task of the
shipped extract (`jobs_first_hour.csv.gz`) submitted in the first `minutes` minutes, with its
real request (CPU, memory), its submit time and its run time (`end − schedule`: how long it
ran once started; a task still running when the trace shard ends — `censored`, 2,004 of the
37,337 — runs until then). Users are the trace's, in the order of their first submission
(seed 002's tie rule: the earlier arrival first), named by the first 8 characters of their
hash; each user's tasks keep submission order.

The cluster is trace machines drawn uniformly at random without replacement (stream
`workload/online/machines`): by default as many as it takes for both CPU and memory to reach
`load_fraction` × the mean the tasks would hold over those minutes if each started on arrival
(the *offered load*; seed 002 gives no size and `drfemu experiment online` has always used
0.8 × of one pool); with `machines`, exactly that many. Decision: drawing goes on until every
task also fits on some drawn machine, so no task waits for ever (the trace's tasks are small,
so this never adds a machine on the shipped hour). Servers keep the trace's machine order.

With `pool`, the cluster is instead one server holding exactly `load_fraction` × the offered
load of each resource: seed 002's single pool, as `drfemu experiment online` replays it.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from drfemu.kernel.params import param
from drfemu.kernel.resources import fits
from drfemu.kernel.streams import RandomStreams
from drfemu.schema.params import CaseSeed, DrawnMachines, TraceSpan, check_values
from drfemu.schema.workload import Server, Task, User, Workload, WorkloadError
from drfemu.workloads.google import ATTRIBUTION, RESOURCES, load_google_trace
from drfemu.workloads.registry import WorkloadSpec

__all__ = ["SPEC", "OnlineParams", "TraceTask", "check_online_options", "load_first_hour", "offered_load",
           "online_case"]

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class TraceTask:
    user: int
    submit: float
    runtime: float
    demand: tuple[float, float]


def load_first_hour() -> tuple[list[TraceTask], list[str]]:
    """The shipped first-hour tasks and the users' names, users in order of first submission."""
    source = resources.files("drfemu.workloads.data.google2011") / "jobs_first_hour.csv.gz"
    with source.open("rb") as raw, gzip.open(raw, "rt", newline="") as text:
        rows = list(csv.DictReader(text))
    names: dict[str, int] = {}
    tasks = []
    for row in rows:
        user = names.setdefault(row["user"], len(names))
        tasks.append(TraceTask(user, float(row["submit"]), float(row["end"]) - float(row["schedule"]),
                               (float(row["cpu"]), float(row["mem"]))))
    return tasks, list(names)


def offered_load(tasks: Sequence[TraceTask], horizon: float = HOUR) -> tuple[float, float]:
    """Mean CPU and memory held over [0, horizon) if every task started on arrival."""
    events = sorted([(t.submit, t.demand) for t in tasks]
                    + [(t.submit + t.runtime, (-t.demand[0], -t.demand[1])) for t in tasks])
    held, area, last = [0.0, 0.0], [0.0, 0.0], 0.0
    for at, (cpu, mem) in events:
        at = min(at, horizon)
        area = [a + h * (at - last) for a, h in zip(area, held)]
        last = at
        held = [held[0] + cpu, held[1] + mem]
    return area[0] / horizon, area[1] / horizon


class OnlineParams(CaseSeed, TraceSpan, DrawnMachines):
    """The trace hour's parameters (`online_case`; `drfemu workload online`)."""

    DEFAULTS = {"minutes": HOUR / 60, "machines": None}

    load_fraction: float = param(default=0.8, help="Cluster size as a fraction of the mean offered CPU and memory load "
                                 "(both reach it).", gt=0, le=100)
    pool: bool = param(default=False, help="One pool server of exactly the load fraction (seed 002's model).")


def check_online_options(minutes: float, load_fraction: float) -> None:
    """The span and cluster size of a trace replay, or one `InputError` line naming the option."""
    check_values(OnlineParams.PARAMS, {"minutes": minutes, "load_fraction": load_fraction})
    if minutes > HOUR / 60:
        raise WorkloadError(f"--minutes must be at most 60 (the extract holds the trace's first hour), got {minutes:g}")


def online_case(minutes: float = 60.0, load_fraction: float = 0.8, machines: int | None = None,
                seed: int = 1, pool: bool = False) -> Workload:
    """The first `minutes` of the trace on a cluster sized to `load_fraction` of its offered load
    (or of `machines` machines; or one pool server of exactly that size)."""
    check_values(OnlineParams.PARAMS, {"minutes": minutes, "load_fraction": load_fraction, "machines": machines,
                                       "case_seed": seed, "pool": pool})
    check_online_options(minutes, load_fraction)
    everything, names = load_first_hour()
    horizon = minutes * 60.0
    tasks = [t for t in everything if t.submit < horizon]
    load = offered_load(tasks, horizon)
    target = (load_fraction * load[0], load_fraction * load[1])
    by_user: dict[int, list[Task]] = {}
    for t in tasks:
        by_user.setdefault(t.user, []).append(Task(t.submit, t.runtime, t.demand))
    users = tuple(User(names[u], by_user[u][0].demand, tuple(by_user[u])) for u in sorted(by_user))
    source = {"kind": "google-2011-online", "minutes": minutes, "load_fraction": load_fraction, "seed": seed,
              "tasks": len(tasks), "offered_load": list(load), "attribution": ATTRIBUTION}
    if pool:
        if machines is not None:
            raise WorkloadError("give --machines or --pool, not both")
        if not all(fits(t.demand, target, target) for t in tasks):
            raise WorkloadError("some task is larger than the pool; raise --load-fraction")
        pool_source = {**source, "machines": 1, "capacity": list(target)}
        return Workload(RESOURCES, (Server("pool", target),), users, pool_source)
    trace = load_google_trace()
    if machines is not None and not 1 <= machines <= len(trace.machines):
        raise WorkloadError(f"--machines must be in [1, {len(trace.machines)}]")
    order = RandomStreams(seed).numpy("workload/online/machines").permutation(len(trace.machines)).tolist()
    demands = set(t.demand for t in tasks)
    picked: list[int] = []
    held = [0.0, 0.0]
    for index in order:
        capacity = trace.machines[index][1]
        if machines is not None:
            if len(picked) == machines:
                break
        elif held[0] >= target[0] and held[1] >= target[1] and not demands:
            break
        picked.append(index)
        held = [held[0] + capacity[0], held[1] + capacity[1]]
        demands = {d for d in demands if not fits(d, capacity, capacity)}
    if demands:
        raise WorkloadError(f"{len(demands)} task request(s) fit on none of the {len(picked)} machines drawn")
    picked.sort()
    servers = tuple(Server(f"m{trace.machines[i][0]}", trace.machines[i][1]) for i in picked)
    capacity = [sum(s.capacity[r] for s in servers) for r in range(2)]
    return Workload(RESOURCES, servers, users, {**source, "machines": len(servers), "capacity": capacity})


def _detail(case: Workload) -> str:
    capacity, load = case.source["capacity"], case.source["offered_load"]
    return (f"capacity {capacity[0]:.4g} CPU, {capacity[1]:.4g} memory; offered load {load[0]:.4g}, {load[1]:.4g}")


def _draw(case_seed: int, minutes: float, load_fraction: float, machines: int | None, pool: bool) -> Workload:
    return online_case(minutes, load_fraction, machines, case_seed, pool)


SPEC = WorkloadSpec("online", "the Google 2011 trace's first hour as tasks that end: every task with its real "
                    "request, submit time and run time, on trace machines sized to the offered load "
                    "(docs/workloads.md)", OnlineParams, _draw, detail=_detail)
