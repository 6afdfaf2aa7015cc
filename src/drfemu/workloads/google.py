"""Google 2011 test cases (thesis §5.1, SPEC §7), from the extract shipped in the package.

`google_case(machines=X, users=Y, seed=S)`:
- X machines drawn uniformly at random, without replacement, among the machines that have a
  capacity at their first ADD event; each keeps that capacity;
- Y users drawn uniformly at random, without replacement, among the users with a submitted
  task requesting both CPU and memory;
- for each user, one of its submitted tasks drawn uniformly at random; its (cpu, mem) request
  is the user's demand.

Draws come from the named streams `workload/google/machines` and `workload/google/users` of
the root seed, so the same (X, Y, seed) always gives the same case. Servers keep the trace's
machine order; users keep the order in which they were drawn. Server ids are `m<machine id>`,
user ids the first 12 characters of the trace's user hash (distinct in the extract).
"""

from __future__ import annotations

import csv
import gzip
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import accumulate

import numpy as np

from drfemu.kernel.streams import RandomStreams
from drfemu.schema.params import CaseParams
from drfemu.schema.workload import Server, User, Workload, WorkloadError
from drfemu.workloads.registry import WorkloadSpec

__all__ = ["SPEC", "GoogleTrace", "draw_request", "google_case", "load_google_trace"]

RESOURCES = ("cpu", "mem")
ATTRIBUTION = "Google cluster-usage trace clusterdata-2011-2, CC-BY 4.0 (John Wilkes, Charles Reiss, Google)"


@dataclass(frozen=True, slots=True)
class _UserRequests:
    user: str
    requests: tuple[tuple[float, float], ...]
    cumulative: tuple[int, ...]  # running task counts, for an exact uniform draw over tasks


@dataclass(frozen=True, slots=True)
class GoogleTrace:
    machines: tuple[tuple[int, tuple[float, float]], ...]
    users: tuple[_UserRequests, ...]


def _rows(name: str) -> list[dict[str, str]]:
    path = resources.files("drfemu.workloads.data.google2011") / name
    with path.open("rb") as raw, gzip.open(raw, "rt", newline="") as f:
        return list(csv.DictReader(f))


@lru_cache(maxsize=1)
def load_google_trace() -> GoogleTrace:
    """The packaged extract (read once per process)."""
    machines = tuple((int(r["machine_id"]), (float(r["cpu"]), float(r["mem"]))) for r in _rows("machines.csv.gz"))
    grouped: dict[str, list[tuple[float, float, int]]] = {}
    for r in _rows("user_requests.csv.gz"):
        grouped.setdefault(r["user"], []).append((float(r["cpu"]), float(r["mem"]), int(r["tasks"])))
    users = tuple(
        _UserRequests(user, tuple((c, m) for c, m, _ in rows), tuple(accumulate(n for _, _, n in rows)))
        for user, rows in sorted(grouped.items())
    )
    return GoogleTrace(machines, users)


def draw_request(entry: _UserRequests, rng: np.random.Generator) -> tuple[float, float]:
    """The request of one of the user's submitted tasks, drawn uniformly over its tasks."""
    task = int(rng.integers(entry.cumulative[-1]))
    return entry.requests[bisect_right(entry.cumulative, task)]


def google_case(machines: int = 100, users: int = 20, seed: int = 1) -> Workload:
    """Build the (machines × users) test case for `seed`."""
    trace = load_google_trace()
    if machines < 1 or users < 1:
        raise WorkloadError("a Google case needs at least 1 machine and 1 user")
    if machines > len(trace.machines):
        raise WorkloadError(f"asked for {machines} machines but the trace has {len(trace.machines)} with capacities")
    if users > len(trace.users):
        raise WorkloadError(f"asked for {users} users but the trace has {len(trace.users)} with CPU and memory requests")
    streams = RandomStreams(seed)
    machine_rng = streams.numpy("workload/google/machines")
    user_rng = streams.numpy("workload/google/users")
    picked = sorted(machine_rng.choice(len(trace.machines), size=machines, replace=False).tolist())
    servers = tuple(Server(f"m{trace.machines[i][0]}", trace.machines[i][1]) for i in picked)
    chosen = []
    for index in user_rng.choice(len(trace.users), size=users, replace=False).tolist():
        entry = trace.users[index]
        chosen.append(User(entry.user[:12], draw_request(entry, user_rng)))
    source = {"kind": "google-2011", "machines": machines, "users": users, "seed": seed, "attribution": ATTRIBUTION}
    return Workload(RESOURCES, servers, tuple(chosen), source)


SPEC = WorkloadSpec("google", "a case drawn from the Google 2011 trace (thesis §5.1): machines with their capacities, "
                    "users with one submitted task's request each", CaseParams,
                    lambda machines, users, case_seed: google_case(machines, users, case_seed), label="")
