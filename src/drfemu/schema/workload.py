"""Workloads: servers with capacity vectors, users with demand vectors (SPEC §1, §7).

The JSON file format (documented in docs/workloads.md):

    {
      "resources": ["cpu", "mem"],
      "servers": [{"id": "s0", "capacity": [9, 18]}],
      "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}],
      "source": {...}                      # optional: provenance, free-form
    }

Any number of resources. `id` is optional (default `s<i>` / `u<i>`) and must be unique.

A user is *endless* (the thesis's model: only a `demand`; it submits tasks of that demand one
after another for ever) or *finite*: it has a list of `tasks`, each submitted at `submit`
seconds and running `duration` seconds once started,

    {"id": "B", "demand": [1, 2], "tasks": [{"submit": 0, "duration": 30},
                                            {"submit": 5, "duration": 10, "demand": [2, 1], "count": 3}]}

where a task's `demand` defaults to the user's and `count` repeats a task (a job of identical
tasks). Times are kept to the microsecond, the emulator clock's resolution. A finite user
arrives with its first task and leaves once its last has finished. A workload is all endless
or all finite: an endless user would keep a finite run from ever finishing.

Validation decisions: capacities and demands are finite and non-negative; a server needs
some capacity (not all zeros) and every resource needs capacity somewhere in the cluster; an
individual zero is allowed, since a server may lack a resource (GPUs). A demand needs at
least one positive entry, since a zero task would never fill the cluster. An endless user
whose demand fits on no server is allowed (it is reported as unplaceable); a finite task
that fits on no server is refused, since its user, submitting in order, would wait for ever.

"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_json
from drfemu.kernel.resources import Vector, fits, total_capacity

__all__ = ["LARGEST", "MAX_NODES", "MAX_SEED", "MAX_TASKS", "SMALLEST", "Server", "Task", "User", "Workload",
           "WorkloadError", "check_amount", "load_workload", "parse_workload"]

MAX_TASKS = 10_000_000  # tasks in one workload, after `count` is expanded
MAX_NODES = 100_000  # servers, and users, a generated case may have (the run parameters' --machines and --users)
MAX_SEED = 2**63 - 1  # the largest seed of a run or a draw (--seed, --case-seed and every command's seed option)


class WorkloadError(InputError):
    """A workload is malformed; the message names the offending entry."""


@dataclass(frozen=True, slots=True)
class Server:
    id: str
    capacity: Vector


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a finite user: submitted at `submit` s, running `duration` s once started."""

    submit: float
    duration: float
    demand: Vector


@dataclass(frozen=True, slots=True)
class User:
    """`tasks` is None for an endless user (tasks of `demand` for ever); else its tasks in
    submission order (ties keep the file's order). A finite user's `demand` is its first task's
    unless given."""

    id: str
    demand: Vector
    tasks: tuple[Task, ...] | None = None

    @property
    def finite(self) -> bool:
        return self.tasks is not None


@dataclass(frozen=True, slots=True)
class Workload:
    resources: tuple[str, ...]
    servers: tuple[Server, ...]
    users: tuple[User, ...]
    source: Mapping[str, Any] = field(default_factory=dict)
    _total: Vector | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def finite(self) -> bool:
        """Its users submit finite lists of tasks (else every user is endless)."""
        return self.users[0].finite

    @property
    def task_count(self) -> int:
        return sum(len(u.tasks or ()) for u in self.users)

    @property
    def total(self) -> Vector:
        """Cluster capacity C (eq. 3.1), summed once: set-up reads it per user, and at 100,000
        servers × 5,000 users summing it each time took most of an hour."""
        total = self._total
        if total is None:
            total = total_capacity([s.capacity for s in self.servers])
            object.__setattr__(self, "_total", total)
        return total

    def submitted_by(self, now: float) -> int | None:
        """How many of its tasks are submitted by time `now` (None for endless users)."""
        return sum(t.submit <= now for u in self.users for t in u.tasks or ()) if self.finite else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "resources": list(self.resources),
            "servers": [{"id": s.id, "capacity": list(s.capacity)} for s in self.servers],
            "users": [],
        }
        for u in self.users:
            entry: dict[str, Any] = {"id": u.id, "demand": list(u.demand)}
            if u.tasks is not None:
                entry["tasks"] = [_task_entry(t, u.demand) for t in u.tasks]
            out["users"].append(entry)
        if self.source:
            out["source"] = dict(self.source)
        return out

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")


def _task_entry(task: Task, default: Vector) -> dict[str, Any]:
    entry: dict[str, Any] = {"submit": task.submit, "duration": task.duration}
    if task.demand != default:
        entry["demand"] = list(task.demand)
    return entry


SMALLEST, LARGEST = 1e-9, 1e12  # the range of a non-zero capacity or demand entry


def _number_text(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:20] + f"… ({len(text)} characters)"


def check_amount(x: float, where: str) -> float:
    """`x` if it is a capacity or demand entry drfemu takes — 0 or within [`SMALLEST`, `LARGEST`] —
    else one `WorkloadError` line naming `where` (the bounds of every workload, read or drawn)."""
    if x < 0:
        raise WorkloadError(f"{where} has a negative entry {_number_text(x)}")
    if x != 0 and not SMALLEST <= x <= LARGEST:
        raise WorkloadError(f"{where} entry {_number_text(x)} is outside [{SMALLEST:g}, {LARGEST:g}] (or 0)")
    return float(x)


def _vector(value: Any, length: int, where: str) -> Vector:
    """A capacity or demand vector. Decision: every non-zero entry lies in [1e-9, 1e12], so
    shares never underflow and a run's task counts stay bounded (documented in docs/workloads.md)."""
    if not isinstance(value, list | tuple):
        raise WorkloadError(f"{where} must be a list of {length} numbers")
    if len(value) != length:
        raise WorkloadError(f"{where} has {len(value)} entries but there are {length} resources")
    out = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, int | float):
            raise WorkloadError(f"{where} must hold numbers, got {_number_text(x)}")
        out.append(check_amount(x, where))
    return tuple(out)


def _check_keys(entry: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in entry if k not in allowed)
    if unknown:
        raise WorkloadError(f"{where} has unknown key(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")


def _id(entry: Mapping[str, Any], default: str, where: str) -> str:
    value = entry.get("id", default)
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise WorkloadError(f"{where} id must be a non-empty string (or an integer), got {value!r}")
    return str(value)


def _seconds(entry: Mapping[str, Any], key: str, where: str, positive: bool) -> float | None:
    if key not in entry or entry[key] is None:
        return None
    x = entry[key]
    if isinstance(x, bool) or not isinstance(x, int | float) or not 0 <= x <= LARGEST or (positive and x == 0):
        raise WorkloadError(f"{where} {key} must be a {'positive' if positive else 'non-negative'} number of seconds")
    return float(x)


def _entries(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        raise WorkloadError(f"workload needs a non-empty list {key!r}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise WorkloadError(f"{key}[{i}] must be an object")
    return entries


def _check_ids(ids: Sequence[str], kind: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise WorkloadError(f"duplicate {kind} id {i!r}")
        seen.add(i)


def _user(i: int, entry: Mapping[str, Any], m: int) -> User:
    if "arrival" in entry or "duration" in entry:
        raise WorkloadError(f"users[{i}]: 'arrival' and 'duration' of a user are gone; give its 'tasks', each with "
                            "'submit' and 'duration' (docs/workloads.md)")
    _check_keys(entry, ("id", "demand", "tasks"), f"users[{i}]")
    uid = _id(entry, f"u{i}", f"users[{i}]")
    demand = _demand(entry.get("demand"), m, f"user {uid!r} demand") if "demand" in entry else None
    if "tasks" not in entry:
        if demand is None:
            raise WorkloadError(f"user {uid!r} needs a 'demand' (or a list of 'tasks')")
        return User(uid, demand)
    raw = entry["tasks"]
    if not isinstance(raw, list) or not raw:
        raise WorkloadError(f"user {uid!r} tasks must be a non-empty list")
    tasks: list[Task] = []
    for k, item in enumerate(raw):
        where = f"user {uid!r} tasks[{k}]"
        if not isinstance(item, Mapping):
            raise WorkloadError(f"{where} must be an object")
        _check_keys(item, ("submit", "duration", "demand", "count"), where)
        for key in ("submit", "duration"):
            if key not in item:
                raise WorkloadError(f"{where} needs {key!r}")
        submit = _seconds(item, "submit", where, positive=False)
        duration = _seconds(item, "duration", where, positive=True)
        if "demand" in item:
            task_demand = _demand(item["demand"], m, f"{where} demand")
        elif demand is not None:
            task_demand = demand
        else:
            raise WorkloadError(f"{where} has no 'demand' and user {uid!r} gives none")
        count = item.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TASKS:
            raise WorkloadError(f"{where} count must be an integer in [1, {MAX_TASKS:,}]")
        if len(tasks) + count > MAX_TASKS:
            raise WorkloadError(f"user {uid!r} has more than {MAX_TASKS:,} tasks")
        assert submit is not None and duration is not None
        submit, duration = round(submit, 6), round(duration, 6)  # the emulator's clock counts microseconds
        if duration == 0:
            raise WorkloadError(f"{where} duration must be at least 1 µs (the emulator's clock resolution)")
        tasks.extend([Task(submit, duration, task_demand)] * count)
    order = sorted(range(len(tasks)), key=lambda k: tasks[k].submit)
    ordered = tuple(tasks[k] for k in order)
    return User(uid, demand if demand is not None else ordered[0].demand, ordered)


def _demand(value: Any, m: int, where: str) -> Vector:
    demand = _vector(value, m, where)
    if not any(demand):
        raise WorkloadError(f"{where} demands nothing (all zeros)")
    return demand


def _check_tasks_fit(user: User, capacities: Sequence[Vector]) -> None:
    for demand in dict.fromkeys(t.demand for t in user.tasks or ()):
        if not any(fits(demand, capacity, capacity) for capacity in capacities):
            raise WorkloadError(f"user {user.id!r} has a task needing {list(demand)}, which fits on no server")


def parse_workload(data: Any) -> Workload:
    """Validate a decoded JSON document and build a `Workload`."""
    if not isinstance(data, Mapping):
        raise WorkloadError("workload must be a JSON object with resources, servers and users")
    _check_keys(data, ("resources", "servers", "users", "source"), "the workload")
    resources = data.get("resources")
    if (
        not isinstance(resources, list)
        or not resources
        or not all(isinstance(r, str) and r for r in resources)
    ):
        raise WorkloadError("workload needs 'resources': a non-empty list of names")
    if len(set(resources)) != len(resources):
        raise WorkloadError("resource names must be unique")
    m = len(resources)
    servers = []
    for i, entry in enumerate(_entries(data, "servers")):
        _check_keys(entry, ("id", "capacity"), f"servers[{i}]")
        sid = _id(entry, f"s{i}", f"servers[{i}]")
        capacity = _vector(entry.get("capacity"), m, f"server {sid!r} capacity")
        if not any(capacity):
            raise WorkloadError(f"server {sid!r} has zero capacity in every resource")
        servers.append(Server(sid, capacity))
    users = [_user(i, entry, m) for i, entry in enumerate(_entries(data, "users"))]
    if len({u.finite for u in users}) > 1:
        kind = {True: "finite (with tasks)", False: "endless (demand only)"}
        first = kind[users[0].finite]
        odd = next(u for u in users if u.finite != users[0].finite)
        raise WorkloadError(f"user {odd.id!r} is {kind[odd.finite]} but user {users[0].id!r} is {first}: a "
                            "workload's users are all endless or all finite")
    if sum(len(u.tasks or ()) for u in users) > MAX_TASKS:
        raise WorkloadError(f"the workload has more than {MAX_TASKS:,} tasks")
    _check_ids([s.id for s in servers], "server")
    _check_ids([u.id for u in users], "user")
    total = total_capacity([s.capacity for s in servers])
    for name, c in zip(resources, total):
        if c <= 0:
            raise WorkloadError(f"no server has any {name!r} capacity")
    capacities = [s.capacity for s in servers]
    for user in users:
        _check_tasks_fit(user, capacities)
    source = data.get("source", {})
    if not isinstance(source, Mapping):
        raise WorkloadError("'source' must be an object when given")
    return Workload(tuple(resources), tuple(servers), tuple(users), dict(source))


def load_workload(path: str | Path) -> Workload:
    """Read and validate a workload JSON file (`kernel.files.read_json`: one line naming the file)."""
    data = read_json(path, "a workload file (JSON)", WorkloadError)
    try:
        return parse_workload(data)
    except WorkloadError as error:
        raise WorkloadError(f"{path}: {error}") from None
