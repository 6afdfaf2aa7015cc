"""Build the compact Google 2011 extract that ships inside the package.

    drfemu workload extract TRACE_DIR OUT_DIR

reads `machine_events-part-00000-of-00001.csv.gz` and `task_events-part-00000-of-00500.csv.gz`
of the Google cluster-usage trace clusterdata-2011-2 (CC-BY 4.0, Google) and writes:

- `machines.csv.gz` — `machine_id,cpu,mem`: every machine whose first ADD event carries both
  capacities, with that capacity; sorted by machine id. Decision: the 32 machines whose first
  ADD has empty capacities are left out (SPEC §7: "their capacity when first added").
- `user_requests.csv.gz` — `user,cpu,mem,tasks`: per user, each distinct (cpu, mem) request
  and how many of the user's tasks asked for it. A task is a (job id, task index) with a
  SUBMIT event requesting CPU > 0 and memory > 0; its request is that of its first such SUBMIT.
  Counting tasks lets the case builder draw "one of the user's submitted tasks uniformly at
  random" exactly, without storing every task.
- `jobs_first_hour.csv.gz` — `user,submit,schedule,end,end_event,cpu,mem` (`user`: the first 8
  characters of the hashed name, unique among these users): every task first
  SUBMITted in the trace's first hour (600 s ≤ t < 4,200 s; events before 600 s describe
  tasks already running when the trace began) with CPU > 0 and memory > 0, that was
  SCHEDULEd in the shard. Times are seconds since 600 s, to the millisecond; `end` is the first FINISH, KILL,
  EVICT, FAIL or LOST after the schedule (`end_event` names it), or the end of the shard
  with `end_event` = `censored` when the task was still running then. The trace replay
  (`workloads.online`) takes arrivals from `submit` and run times from
  `end − schedule`. Decision: the 39 tasks never scheduled (killed while pending) are left
  out, since they have no run time.

Numbers are copied as the trace prints them (normalised units), never re-rounded.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import csv_records, text_lines

__all__ = ["MACHINE_EVENTS", "TASK_EVENTS", "build_extract"]

MACHINE_EVENTS = "machine_events-part-00000-of-00001.csv.gz"
TASK_EVENTS = "task_events-part-00000-of-00500.csv.gz"

_ADD, _SUBMIT, _SCHEDULE = "0", "0", "1"
_ENDS = {"2": "evict", "3": "fail", "4": "finish", "5": "kill", "6": "lost"}
HOUR_START_US, HOUR_END_US = 600_000_000, 4_200_000_000


def _write_gzip_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    # mtime=0 keeps the file byte-identical across rebuilds.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(buffer.getvalue().encode("utf-8"))


PART_FILE = "a clusterdata-2011-2 part file"
MACHINE_FIELDS, MACHINE_INTEGERS, MACHINE_NUMBERS = 6, (1,), (4, 5)
TASK_FIELDS, TASK_INTEGERS, TASK_NUMBERS = 13, (0,), (9, 10)


def _records(path: Path, fields: int, integers: tuple[int, ...], numbers: tuple[int, ...]) -> Iterator[list[str]]:
    """The rows of a gzip part file, each with at least `fields` fields, the `integers` columns
    integers and the `numbers` columns finite numbers or empty; anything else is one line naming
    the file, the line and the field."""
    for line, row in csv_records(text_lines(path, PART_FILE, compressed=True), path, PART_FILE):
        if len(row) < fields:
            raise InputError(f"{path}: line {line}: {len(row)} fields where {PART_FILE} has {fields}")
        for column in integers:
            if not (row[column].isascii() and row[column].isdigit()):
                raise InputError(f"{path}: line {line}, field {column + 1}: {row[column][:40]!r} is not an integer")
        for column in numbers:
            if row[column] and not _finite_number(row[column]):
                raise InputError(f"{path}: line {line}, field {column + 1}: {row[column][:40]!r} is not a number")
        yield row


def _finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _machines(trace_dir: Path) -> list[list[str]]:
    first_add: dict[int, tuple[str, str]] = {}
    for row in _records(trace_dir / MACHINE_EVENTS, MACHINE_FIELDS, MACHINE_INTEGERS, MACHINE_NUMBERS):
        if row[2] != _ADD:
            continue
        machine = int(row[1])
        if machine not in first_add:
            first_add[machine] = (row[4], row[5])
    return [[str(m), cpu, mem] for m, (cpu, mem) in sorted(first_add.items()) if cpu and mem]


def _user_requests(trace_dir: Path) -> list[list[str]]:
    first_request: dict[tuple[str, str], tuple[str, str, str]] = {}
    for row in _records(trace_dir / TASK_EVENTS, TASK_FIELDS, TASK_INTEGERS, TASK_NUMBERS):
        if row[5] != _SUBMIT or not row[9] or not row[10]:
            continue
        if float(row[9]) <= 0 or float(row[10]) <= 0:
            continue
        key = (row[2], row[3])
        if key not in first_request:
            first_request[key] = (row[6], row[9], row[10])
    per_user: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for user, cpu, mem in first_request.values():
        per_user[user][(cpu, mem)] += 1
    rows = []
    for user in sorted(per_user):
        for (cpu, mem), n in sorted(per_user[user].items(), key=lambda kv: (float(kv[0][0]), float(kv[0][1]))):
            rows.append([user, cpu, mem, str(n)])
    return rows


def _seconds(microseconds: int) -> str:
    return f"{(microseconds - HOUR_START_US) / 1e6:.3f}".rstrip("0").rstrip(".")


def _jobs_first_hour(trace_dir: Path) -> list[list[str]]:
    tasks: dict[tuple[str, str], dict[str, object]] = {}
    last = 0
    for row in _records(trace_dir / TASK_EVENTS, TASK_FIELDS, TASK_INTEGERS, TASK_NUMBERS):
        t, kind, key = int(row[0]), row[5], (row[2], row[3])
        last = max(last, t)
        task = tasks.get(key)
        if kind == _SUBMIT:
            if task is None:
                tasks[key] = {"submit": t, "user": row[6], "cpu": row[9], "mem": row[10]}
        elif task is None:
            continue
        elif kind == _SCHEDULE and "schedule" not in task:
            task["schedule"] = t
        elif kind in _ENDS and "schedule" in task and "end" not in task:
            task["end"], task["end_event"] = t, _ENDS[kind]
    rows = []
    for task in tasks.values():
        submit = int(task["submit"])  # type: ignore[call-overload]
        if not HOUR_START_US <= submit < HOUR_END_US or "schedule" not in task:
            continue
        if not task["cpu"] or not task["mem"] or float(task["cpu"]) <= 0 or float(task["mem"]) <= 0:  # type: ignore[arg-type]
            continue
        end, event = (task["end"], task["end_event"]) if "end" in task else (last, "censored")
        rows.append([str(task["user"]), _seconds(submit), _seconds(int(task["schedule"])),  # type: ignore[call-overload]
                     _seconds(int(end)), str(event), str(task["cpu"]), str(task["mem"])])  # type: ignore[call-overload]
    # Users by the first 8 characters of their hashed name: unique among the hour's users.
    short = {row[0]: row[0][:8] for row in rows}
    if len(set(short.values())) != len(short):
        raise InputError("two users of the first hour share a hash prefix (8 characters): not the 2011 trace's users")
    for row in rows:
        row[0] = short[row[0]]
    rows.sort(key=lambda r: (float(r[1]), r[0], float(r[2])))
    return rows


def build_extract(trace_dir: str | Path, out_dir: str | Path) -> tuple[int, int, int]:
    """Write the extract files; returns (machines, user-request rows, first-hour jobs)."""
    trace, out = Path(trace_dir), Path(out_dir)
    missing = [name for name in (MACHINE_EVENTS, TASK_EVENTS) if not (trace / name).is_file()]
    if missing:
        raise InputError(f"{trace} lacks {' and '.join(missing)} (the clusterdata-2011-2 part files)")
    machines = _machines(trace)
    requests = _user_requests(trace)
    jobs = _jobs_first_hour(trace)
    out.mkdir(parents=True, exist_ok=True)
    _write_gzip_csv(out / "machines.csv.gz", ["machine_id", "cpu", "mem"], machines)
    _write_gzip_csv(out / "user_requests.csv.gz", ["user", "cpu", "mem", "tasks"], requests)
    _write_gzip_csv(out / "jobs_first_hour.csv.gz", ["user", "submit", "schedule", "end", "end_event", "cpu", "mem"],
                    jobs)
    return len(machines), len(requests), len(jobs)

