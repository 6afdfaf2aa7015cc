"""Workloads: servers with capacity vectors, users with demand vectors (SPEC §1, §7).

The JSON file format (documented in docs/workloads.md):

    {
      "resources": ["cpu", "mem"],
      "servers": [{"id": "s0", "capacity": [9, 18]}],
      "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}],
      "source": {...}                      # optional: provenance, free-form
    }

Any number of resources. `id` is optional (default `s<i>` / `u<i>`) and must be unique.
Users may carry `arrival` and `duration` in seconds (≥ 0 and > 0) for finite-task
extensions; the endless-task protocols ignore them.

Validation decisions: capacities and demands are finite and non-negative; a server needs
some capacity (not all zeros) and every resource needs capacity somewhere in the cluster; an
individual zero is allowed, since a server may lack a resource (GPUs). A demand needs at
least one positive entry, since a zero task would never fill the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.errors import InputError
from protocols.resources import Vector, total_capacity

__all__ = ["Server", "User", "Workload", "WorkloadError", "load_workload", "parse_workload"]


class WorkloadError(InputError):
    """A workload is malformed; the message names the offending entry."""


@dataclass(frozen=True, slots=True)
class Server:
    id: str
    capacity: Vector


@dataclass(frozen=True, slots=True)
class User:
    id: str
    demand: Vector
    arrival: float | None = None
    duration: float | None = None


@dataclass(frozen=True, slots=True)
class Workload:
    resources: tuple[str, ...]
    servers: tuple[Server, ...]
    users: tuple[User, ...]
    source: Mapping[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> Vector:
        """Cluster capacity C (eq. 3.1)."""
        return total_capacity([s.capacity for s in self.servers])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "resources": list(self.resources),
            "servers": [{"id": s.id, "capacity": list(s.capacity)} for s in self.servers],
            "users": [],
        }
        for u in self.users:
            entry: dict[str, Any] = {"id": u.id, "demand": list(u.demand)}
            if u.arrival is not None:
                entry["arrival"] = u.arrival
            if u.duration is not None:
                entry["duration"] = u.duration
            out["users"].append(entry)
        if self.source:
            out["source"] = dict(self.source)
        return out

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")


SMALLEST, LARGEST = 1e-9, 1e12  # the range of a non-zero capacity or demand entry


def _number_text(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:20] + f"… ({len(text)} characters)"


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
        if x < 0:
            raise WorkloadError(f"{where} has a negative entry {_number_text(x)}")
        if x != 0 and not SMALLEST <= x <= LARGEST:
            raise WorkloadError(f"{where} entry {_number_text(x)} is outside [{SMALLEST:g}, {LARGEST:g}] (or 0)")
        out.append(float(x))
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
    users = []
    for i, entry in enumerate(_entries(data, "users")):
        _check_keys(entry, ("id", "demand", "arrival", "duration"), f"users[{i}]")
        uid = _id(entry, f"u{i}", f"users[{i}]")
        demand = _vector(entry.get("demand"), m, f"user {uid!r} demand")
        if not any(demand):
            raise WorkloadError(f"user {uid!r} demands nothing (all zeros)")
        arrival = _seconds(entry, "arrival", f"user {uid!r}", positive=False)
        duration = _seconds(entry, "duration", f"user {uid!r}", positive=True)
        users.append(User(uid, demand, arrival, duration))
    _check_ids([s.id for s in servers], "server")
    _check_ids([u.id for u in users], "user")
    total = total_capacity([s.capacity for s in servers])
    for name, c in zip(resources, total):
        if c <= 0:
            raise WorkloadError(f"no server has any {name!r} capacity")
    source = data.get("source", {})
    if not isinstance(source, Mapping):
        raise WorkloadError("'source' must be an object when given")
    return Workload(tuple(resources), tuple(servers), tuple(users), dict(source))


def load_workload(path: str | Path) -> Workload:
    """Read and validate a workload JSON file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkloadError(f"workload file not found: {p}") from None
    except IsADirectoryError:
        raise WorkloadError(f"{p} is a directory, not a workload file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise WorkloadError(f"cannot read workload file {p}: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise WorkloadError(f"{p} is not valid JSON: {error.msg} at line {error.lineno}") from None
    except RecursionError:
        raise WorkloadError(f"{p} is nested too deeply to be a workload") from None
    try:
        return parse_workload(data)
    except WorkloadError as error:
        raise WorkloadError(f"{p}: {error}") from None
