"""Synthetic workloads with any number of resources (SPEC §7).

Servers draw each resource's capacity independently from the classes {0.25, 0.5, 0.75, 1.0}
(the trace's normalised machine sizes); users draw each entry of their demand log-uniformly
in [0.001, 0.1] — the range where the Google 2011 requests lie — so every resource can be a
user's dominant one. Draws come from the stream `workload/synthetic` of the seed.

**Tasks that end** (`tasks` > 0): each user submits `tasks` tasks of its demand, at times drawn
from the arrival process `arrivals` (default `poisson:1`) and running for times drawn from
`durations` (default `exp:10`; `kernel.processes`), from the streams
`workload/synthetic/arrivals` and `workload/synthetic/durations`, user by user — so the
cluster and the demands are those of the same case without tasks.

**Scarce resources** (`scarce`, e.g. GPUs): a resource named there is held only by a
`holders` fraction of the servers (the others have none of it) and demanded only by a
`demanders` fraction of the users (the others demand none), each at least one, chosen from
the stream `workload/synthetic/scarce`. Servers that hold a scarce resource are large
machines, as GPU servers are: each of their other resources is raised to at least the
upper classes' 0.75. Users that demand a scarce resource are dominated by it, as GPU jobs
are: their demand for it is moved into the upper decade of the range ([0.01, 0.1]) and
their other demands into the lower one ([0.001, 0.01]), keeping each draw's place within
its decade. Every other draw is that of the same case without scarcity. This is the hard
case for placement: GPU and CPU-only servers, GPU and CPU-only users, where a CPU-only task
placed on a GPU server can strand its GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drfemu.kernel.params import param
from drfemu.kernel.processes import ARRIVALS, DURATIONS, Draw, arrival_process, duration_distribution
from drfemu.kernel.resources import fits
from drfemu.kernel.streams import RandomStreams
from drfemu.schema.params import CaseParams, check_values
from drfemu.schema.workload import MAX_TASKS, Server, Task, User, Workload, WorkloadError
from drfemu.workloads.registry import WorkloadSpec

__all__ = ["SPEC", "SyntheticParams", "synthetic_case"]

CAPACITY_CLASSES = (0.25, 0.5, 0.75, 1.0)
DEMAND_RANGE = (0.001, 0.1)
LARGE_MACHINE = 0.75  # the least of each other resource a holder of a scarce resource has


class SyntheticParams(CaseParams):
    """A synthetic case's parameters: `--machines` (its servers), `--users`, `--case-seed`, and these."""

    resources: str = param(default="cpu,mem", help="Comma-separated resource names.")
    scarce: str = param(default="", help="Comma-separated resources only some servers have and some users demand "
                        "(e.g. gpu).")
    holders: float = param(default=0.25, help="Share of the servers that have each scarce resource.", gt=0, le=1)
    demanders: float = param(default=0.5, help="Share of the users that demand each scarce resource.", gt=0, le=1)
    tasks: int = param(default=0, help="Tasks per user, which end (0: endless users, the thesis's).", ge=0,
                       le=MAX_TASKS)
    arrivals: str = param(default="poisson:1", help=f"With --tasks, when they arrive: {' | '.join(ARRIVALS)}.")
    durations: str = param(default="exp:10", help=f"With --tasks, how long they run: {' | '.join(DURATIONS)}.")


def synthetic_case(servers: int, users: int, resources: Sequence[str] = ("cpu", "mem"), seed: int = 1,
                   scarce: Sequence[str] = (), holders: float = 0.25, demanders: float = 0.5, tasks: int = 0,
                   arrivals: str = "poisson:1", durations: str = "exp:10") -> Workload:
    """A random cluster of `servers` and `users` over the named resources; the `scarce` ones
    are held by a `holders` fraction of servers and demanded by a `demanders` fraction of users.
    With `tasks` > 0 every user submits that many tasks, arriving by `arrivals` and running for
    `durations` (else the users are endless)."""
    names = tuple(resources)
    check_values(SyntheticParams.PARAMS, {"machines": servers, "users": users, "case_seed": seed, "holders": holders,
                                          "demanders": demanders, "tasks": tasks})
    unknown = [r for r in scarce if r not in names]
    if unknown:
        raise WorkloadError(f"scarce resource(s) {', '.join(unknown)} not among the resources {', '.join(names)}")
    if not 0 <= tasks <= MAX_TASKS // users:
        raise WorkloadError(f"tasks per user must be in [0, {MAX_TASKS // users:,}]")
    submit_times, run_times = arrival_process(arrivals), duration_distribution(durations)
    if not names or len(set(names)) != len(names):
        raise WorkloadError("resources must be a non-empty list of distinct names")
    rng = RandomStreams(seed).numpy("workload/synthetic")
    m = len(names)
    capacities = rng.choice(np.array(CAPACITY_CLASSES), size=(servers, m))
    low, high = np.log(DEMAND_RANGE[0]), np.log(DEMAND_RANGE[1])
    demands = np.round(np.exp(rng.uniform(low, high, size=(users, m))), 6)
    if scarce:
        pick = RandomStreams(seed).numpy("workload/synthetic/scarce")
        for name in scarce:
            r = names.index(name)
            without = _fraction_without(pick, servers, holders)
            held = np.setdiff1d(np.arange(servers), without)
            others = np.array([c for c in range(m) if names[c] not in scarce], dtype=np.intp)
            capacities[np.ix_(held, others)] = np.maximum(capacities[np.ix_(held, others)], LARGE_MACHINE)
            capacities[without, r] = 0.0
            lacking = _fraction_without(pick, users, demanders)
            wanting = np.setdiff1d(np.arange(users), lacking)
            decade = DEMAND_RANGE[1] / DEMAND_RANGE[0]
            if decade >= 100:  # room for a lower and an upper decade
                position = np.log10(demands[wanting] / DEMAND_RANGE[0]) % 1.0  # place within a decade
                lower = np.round(DEMAND_RANGE[0] * 10.0 ** position, 6)
                upper = np.round(DEMAND_RANGE[1] / 10.0 * 10.0 ** position, 6)
                demands[wanting] = lower
                demands[wanting, r] = upper[:, r]
            demands[lacking, r] = 0.0
    cluster = tuple(Server(f"s{i}", tuple(float(x) for x in row)) for i, row in enumerate(capacities))
    people = tuple(User(f"u{i}", tuple(float(x) for x in row)) for i, row in enumerate(demands))
    source = ({"kind": "synthetic", "servers": servers, "users": users, "seed": seed}
              | ({"scarce": list(scarce), "holders": holders, "demanders": demanders} if scarce else {}))
    if tasks:
        people = _with_tasks(people, cluster, tasks, submit_times, run_times, RandomStreams(seed))
        source |= {"tasks": tasks, "arrivals": arrivals, "durations": durations}
    return Workload(names, cluster, people, source)


def _with_tasks(users: tuple[User, ...], servers: tuple[Server, ...], tasks: int, submit_times: Draw,
                run_times: Draw, streams: RandomStreams) -> tuple[User, ...]:
    """Each user with `tasks` tasks of its demand. A user whose demand fits on no server gets
    none (it would wait for ever): refused with an error naming it."""
    arrival_rng = streams.numpy("workload/synthetic/arrivals")
    duration_rng = streams.numpy("workload/synthetic/durations")
    out = []
    for user in users:
        if not any(fits(user.demand, s.capacity, s.capacity) for s in servers):
            raise WorkloadError(f"user {user.id!r} demands {list(user.demand)}, which fits on no server: draw another "
                                "seed or more servers for a finite case")
        submits = submit_times(arrival_rng, tasks).tolist()
        runs = run_times(duration_rng, tasks).tolist()
        out.append(User(user.id, user.demand, tuple(Task(t, d, user.demand) for t, d in zip(submits, runs))))
    return tuple(out)


def _fraction_without(rng: np.random.Generator, n: int, fraction: float) -> np.ndarray:
    """Indices of the `n − k` items left out when `k = max(1, round(fraction · n))` keep a resource."""
    keep = max(1, round(fraction * n))
    return rng.permutation(n)[keep:]


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _draw(machines: int, users: int, case_seed: int, resources: str, scarce: str, holders: float, demanders: float,
          tasks: int, arrivals: str, durations: str) -> Workload:
    return synthetic_case(machines, users, _names(resources), case_seed, _names(scarce), holders, demanders, tasks,
                          arrivals, durations)


SPEC = WorkloadSpec("synthetic", "a synthetic case with any resources, some of them scarce (the GPU case), with "
                    "endless users or tasks that end", SyntheticParams, _draw)
