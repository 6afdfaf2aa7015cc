"""A checker that reads only a run log (`drfemu check-log`, issue 37): capacity and the ledger
re-checked from outside, as a tool written without this code would.

It replays the records of `observers.run_log` in order and refuses a log in which
- a task starts on a server that is down, or while the same task is already running;
- a server holds more than its capacity, by the emulator's fit rule (a demand fits when every
  resource is at most what is free plus 1e-9 of the capacity), or, in the device model (the
  header names `devices`), a device holds more than one unit, a fraction is not on exactly one
  device or a task of n units not on n devices;
- a task ends that is not running there, or a task starts that was never submitted.
A crash kills what ran on the crashed server. At the end it gives the ledger it saw: tasks
submitted, started, ended, killed, resubmitted and still running.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_text

__all__ = ["LogCheck", "check_log", "check_log_file"]

REL_TOL = 1e-9


@dataclass
class LogCheck:
    """What the log showed, and the first violation (None: none)."""

    records: int = 0
    ledger: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("submitted", "started", "ended", "killed", "resubmitted", "running"), 0))
    violation: str | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None


def check_log(records: Iterable[dict[str, Any]]) -> LogCheck:
    """Replay `records` (a run log, in order); stops at the first violation."""
    result = LogCheck()
    capacity: dict[str, list[float]] = {}
    used: dict[str, list[float]] = {}
    down: set[str] = set()
    running: dict[tuple[str, int], tuple[str, list[float]]] = {}
    submitted: set[tuple[str, int]] = set()
    device_of: int | None = None  # the index of the resource modelled as devices
    device_used: dict[str, list[float]] = {}  # server -> the amount each of its devices holds
    held: dict[tuple[str, int], list[int]] = {}  # task -> its devices
    for number, record in enumerate(records, start=1):
        result.records = number
        kind, at = record.get("event"), record.get("time")

        def fail(why: str) -> LogCheck:
            result.violation = f"record {number} (t={at}): {why}"
            return result

        if kind == "run":
            capacity = {s["id"]: [float(x) for x in s["capacity"]] for s in record["servers"]}
            used = {sid: [0.0] * len(c) for sid, c in capacity.items()}
            if record.get("devices") is not None:
                device_of = list(record["resources"]).index(record["devices"])
                device_used = {sid: [0.0] * round(c[device_of]) for sid, c in capacity.items()}
        elif kind == "submit":
            submitted.add((record["user"], record["task"]))
            result.ledger["submitted"] += 1
        elif kind == "start":
            key, server, demand = (record["user"], record["task"]), record["server"], record["demand"]
            if not capacity:
                return fail("a start before the run's header")
            if key not in submitted:
                return fail(f"task {key[1]} of user {key[0]} starts without having been submitted")
            if server in down:
                return fail(f"task {key[1]} of user {key[0]} starts on {server}, which is down")
            if key in running:
                return fail(f"task {key[1]} of user {key[0]} starts on {server} while it runs on {running[key][0]}")
            total = [u + d for u, d in zip(used[server], demand)]
            if any(t > c + REL_TOL * c for t, c in zip(total, capacity[server])):
                return fail(f"{server} would hold {total}, over its capacity {capacity[server]}")
            if device_of is not None:
                why = _hold_devices(device_used[server], demand[device_of], record.get("devices", []))
                if why is not None:
                    return fail(f"task {key[1]} of user {key[0]} on {server}: {why}")
                held[key] = list(record.get("devices", []))
            used[server] = total
            running[key] = (server, list(demand))
            result.ledger["started"] += 1
        elif kind == "end":
            key, server = (record["user"], record["task"]), record["server"]
            if running.get(key, (None,))[0] != server:
                return fail(f"task {key[1]} of user {key[0]} ends on {server}, where it is not running")
            _, demand = running.pop(key)
            used[server] = [u - d for u, d in zip(used[server], demand)]
            if device_of is not None:
                for d in held.pop(key, []):
                    device_used[server][d] -= min(demand[device_of], 1.0)
            result.ledger["ended"] += 1
        elif kind == "resubmit":
            result.ledger["resubmitted"] += 1
        elif kind == "crash":
            actor = record["actor"]
            down.add(actor)
            if actor in used:
                killed = [key for key, (server, _) in running.items() if server == actor]
                for key in killed:
                    del running[key]
                    held.pop(key, None)
                result.ledger["killed"] += len(killed)
                used[actor] = [0.0] * len(capacity[actor])
                if device_of is not None:
                    device_used[actor] = [0.0] * len(device_used[actor])
        elif kind == "recover":
            down.discard(record["actor"])
    result.ledger["running"] = len(running)
    return result


def _hold_devices(used: list[float], amount: float, devices: list[int]) -> str | None:
    """Put `amount` of the device resource on `devices` (`used`: what each device holds);
    returns what is wrong, or None."""
    need = 0 if amount <= 0 else 1 if amount < 1 else round(amount)
    if len(set(devices)) != need or len(devices) != need or any(not 0 <= d < len(used) for d in devices):
        return f"{amount:g} of the device resource needs {need} device(s) of {len(used)}, holds {devices}"
    each = min(amount, 1.0)
    for d in devices:
        if used[d] + each > 1.0 + REL_TOL:
            return f"device {d} would hold {used[d] + each:g}, over one unit"
    for d in devices:
        used[d] += each
    return None


def check_log_file(path: Path) -> LogCheck:
    """`check_log` of a JSON-lines file; a file that is not such a log is one `InputError` line."""
    lines = read_text(path, "a run log (JSON lines)").splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}: line {number} is not JSON ({error.msg})") from None
        if not isinstance(record, dict) or "event" not in record:
            raise InputError(f"{path}: line {number} is not a run-log record")
        records.append(record)
    if not records or records[0]["event"] != "run":
        raise InputError(f"{path}: not a run log of this version (its first record is not the run's header)")
    try:
        return check_log(records)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{path}: a record lacks a field or has one of the wrong kind ({error})") from None
