"""Build the compact Google 2011 extract that ships inside the package.

    python -m experiments.trace_extract TRACE_DIR OUT_DIR

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

Numbers are copied as the trace prints them (normalised units), never re-rounded.
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
from collections import Counter, defaultdict
from pathlib import Path

__all__ = ["MACHINE_EVENTS", "TASK_EVENTS", "build_extract"]

MACHINE_EVENTS = "machine_events-part-00000-of-00001.csv.gz"
TASK_EVENTS = "task_events-part-00000-of-00500.csv.gz"

_ADD, _SUBMIT = "0", "0"


def _write_gzip_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    # mtime=0 keeps the file byte-identical across rebuilds.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(buffer.getvalue().encode("utf-8"))


def _machines(trace_dir: Path) -> list[list[str]]:
    first_add: dict[int, tuple[str, str]] = {}
    with gzip.open(trace_dir / MACHINE_EVENTS, "rt", newline="") as f:
        for row in csv.reader(f):
            if row[2] != _ADD:
                continue
            machine = int(row[1])
            if machine not in first_add:
                first_add[machine] = (row[4], row[5])
    return [[str(m), cpu, mem] for m, (cpu, mem) in sorted(first_add.items()) if cpu and mem]


def _user_requests(trace_dir: Path) -> list[list[str]]:
    first_request: dict[tuple[str, str], tuple[str, str, str]] = {}
    with gzip.open(trace_dir / TASK_EVENTS, "rt", newline="") as f:
        for row in csv.reader(f):
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


def build_extract(trace_dir: str | Path, out_dir: str | Path) -> tuple[int, int]:
    """Write both extract files; returns (machines, user-request rows)."""
    trace, out = Path(trace_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    machines = _machines(trace)
    requests = _user_requests(trace)
    _write_gzip_csv(out / "machines.csv.gz", ["machine_id", "cpu", "mem"], machines)
    _write_gzip_csv(out / "user_requests.csv.gz", ["user", "cpu", "mem", "tasks"], requests)
    return len(machines), len(requests)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m experiments.trace_extract TRACE_DIR OUT_DIR")
    n_machines, n_rows = build_extract(sys.argv[1], sys.argv[2])
    print(f"{n_machines} machines, {n_rows} user-request rows written to {sys.argv[2]}")
