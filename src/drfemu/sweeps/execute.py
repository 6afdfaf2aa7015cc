"""Run a sweep: every distinct run of a config, on a process pool or a Dask cluster (issue 5).

The output directory holds
- `sweep.json`: the experiments (their points, tables and figures), merged by name with
  those of earlier sweeps into the same directory;
- `runs/<run id>.json`: one record per finished run — `id`, `params` (canonical), `status`
  (`ok` or `failed`), `result` (the `drfemu run --json` document) or `error` and
  `traceback`, and the `drfemu_version` that ran it;
- `runs.csv` and `runs.parquet`: the tidy table of every record (`sweeps.tidy`).

Resuming: a run whose record says `ok` is never run again; a failed run is run again on
the next sweep (failures are mostly crashes or resource limits worth retrying; a config
error is caught before anything runs). Records are written atomically as runs finish, so
an interrupted sweep loses only the runs in flight.

Order: the runs expected to take longest start first (gradient protocols, larger
clusters, larger views, rarer gradient exchanges), so the last worker to finish is not
left with the longest run.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_json
from drfemu.protocols.registry import GradientUse, get_protocol
from drfemu.sweeps.config import Experiment, Sweep
from drfemu.sweeps.records import Record, load_records, read_manifest, write_atomic, write_record
from drfemu.sweeps.tidy import write_tidy
from drfemu.tools.pools import worker_pool

__all__ = ["RunPoint", "SweepSummary", "dask_cluster", "execute_run", "order_runs", "process_pool", "read_manifest",
           "run_sweep", "write_manifest"]

RunPoint = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Canonical parameters → the run's result document (`assembly.run.run_point`).
The sweep stage is given it rather than importing it, so it loads no actor; for a process
pool or Dask it must be a module-level function (it is pickled by reference)."""


def _drfemu_version() -> str:
    try:
        return version("drfemu")
    except PackageNotFoundError:
        return "unknown"


def failed_record(run: str, params: Mapping[str, Any], error: str, trace: str = "") -> Record:
    """The record of a run that did not finish: its error, and the traceback when there is one."""
    return {"id": run, "params": dict(params), "drfemu_version": _drfemu_version(), "status": "failed",
            "error": error, "traceback": trace}


def execute_run(run_point: RunPoint, run: str, params: Mapping[str, Any]) -> Record:
    """Run one point and return its record; an exception becomes a `failed` record."""
    try:
        result = run_point(params)
    except Exception as error:  # a failed run is a result of the sweep, not the end of it
        return failed_record(run, params, f"{type(error).__name__}: {error}", traceback.format_exc())
    return {"id": run, "params": dict(params), "drfemu_version": _drfemu_version(), "status": "ok", "result": result}


def _workload_size(path: str) -> tuple[int, int]:
    """Servers and users of a workload file."""
    document = read_json(path, "a workload file (JSON)")
    return len(document["servers"]), len(document["users"])


def _expected_cost(params: Mapping[str, Any], servers: int, users: int) -> tuple[float, ...]:
    spec = get_protocol(params["protocol"])
    size = servers * (1 + users / 40)
    if not spec.distributed:
        return (0.0, size)
    gradient = spec.gradient is GradientUse.LIVE
    return (1.0 if gradient else 0.5, size * (params["neighbors"] if gradient else 1)
            / (params["shuffles_per_tick"] ** 0.5 if gradient else 1.0))


def order_runs(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Run ids, longest expected first (ties in the order given); a workload file's servers and
    users are counted from the file, once per file."""
    sizes: dict[str, tuple[int, int]] = {}

    def cost(run: str) -> tuple[float, ...]:
        params = runs[run]
        if params["machines"] is not None:
            return _expected_cost(params, params["machines"], params["users"])
        if params["workload"] not in sizes:
            sizes[params["workload"]] = _workload_size(params["workload"])
        return _expected_cost(params, *sizes[params["workload"]])

    return sorted(runs, key=cost, reverse=True)


def write_manifest(out: Path, experiments: Iterable[Experiment]) -> None:
    """Write `sweep.json`, keeping experiments of other configs swept into `out` before."""
    path = out / "sweep.json"
    merged: dict[str, dict[str, Any]] = {}
    if path.exists():
        for data in read_manifest(path):
            merged[data["name"]] = data
    for experiment in experiments:
        merged[experiment.name] = experiment.to_dict()
    write_atomic(path, json.dumps({"experiments": list(merged.values())}, indent=1) + "\n")


@dataclass(frozen=True)
class SweepSummary:
    total: int
    skipped: int
    ran: int
    failed: int
    wall_s: float
    parquet: Path | None


Executor = Callable[[list[tuple[str, dict[str, Any]]]], Iterator[Record]]


def process_pool(workers: int, run_point: RunPoint) -> Executor:
    """Runs in `workers` processes, never more than there are runs (in this process when that
    is 1), yielding records as they finish.

    A worker that dies takes the runs in flight with it: they are recorded as failed. If the
    caller stops (an interrupt), the workers are killed and their runs left to the next sweep.
    """

    def execute(todo: list[tuple[str, dict[str, Any]]]) -> Iterator[Record]:
        if min(workers, len(todo)) <= 1:
            for run, params in todo:
                yield execute_run(run_point, run, params)
            return
        with worker_pool(min(workers, len(todo))) as pool:
            futures = {pool.submit(execute_run, run_point, run, params): (run, params) for run, params in todo}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        yield future.result()
                    except BrokenProcessPool as error:
                        yield failed_record(*futures[future], f"worker process died: {error}")

    return execute


def dask_cluster(address: str, run_point: RunPoint) -> Executor:
    """Runs on the dask.distributed scheduler at `address`, yielding records as they finish."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError("--dask needs dask.distributed: pip install 'drfemu[sweep]'") from None

    def execute(todo: list[tuple[str, dict[str, Any]]]) -> Iterator[Record]:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError, ValueError) as error:  # ValueError: not an address
            raise InputError(f"cannot reach the Dask scheduler at {address}: {error}") from None
        try:
            futures = [client.submit(execute_run, run_point, run, params, key=f"drfemu-{run}", pure=False)
                       for run, params in todo]
            by_key = {f.key: (run, params) for f, (run, params) in zip(futures, todo)}
            for future in as_completed(futures):
                try:
                    yield future.result()
                except Exception as error:  # a killed worker: the run is recorded, the sweep goes on
                    yield failed_record(*by_key[future.key], f"dask: {type(error).__name__}: {error}")
        finally:
            client.close()

    return execute


def run_sweep(
    sweep: Sweep,
    out: Path,
    executor: Executor,
    on_record: Callable[[Record, int, int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> SweepSummary:
    """Run every run of `sweep` that `out` has no `ok` record for; write records and tables.

    `on_start(todo, skipped)` is called once, `on_record(record, done, todo)` per finished run.
    """
    (out / "runs").mkdir(parents=True, exist_ok=True)
    write_manifest(out, sweep.experiments)
    finished = {r for r, rec in load_records(out).items() if rec.get("status") == "ok"}
    todo = [(r, sweep.runs[r]) for r in order_runs(sweep.runs) if r not in finished]
    skipped = len(sweep.runs) - len(todo)
    if on_start is not None:
        on_start(len(todo), skipped)
    started = time.perf_counter()
    ran = failed = 0
    records = executor(todo)
    try:
        for record in records:
            write_record(out, record)
            ran += 1
            failed += record["status"] != "ok"
            if on_record is not None:
                on_record(record, ran, len(todo))
    finally:
        if isinstance(records, Generator):
            records.close()  # a pool's workers end now, not when the interrupt's traceback is freed
        parquet = write_tidy(out)
    return SweepSummary(len(sweep.runs), skipped, ran, failed, time.perf_counter() - started, parquet)
