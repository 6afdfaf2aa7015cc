"""Every protocol on the trace's own arrivals (issue 15): `drfemu experiment online-protocols`.

Builds the finite workload of `workloads.online.online_case` once, writes it to
`OUT/workload.json`, and runs each named protocol on it with the given run parameters, on a
process pool, writing `OUT/<protocol>.json` (the `drfemu run --json` document) as each run
finishes. Resumable: a protocol whose result file exists with the same workload and
parameters is not run again. `reports.online` turns the directory into
`docs/results-online.md`.

The runs start in a sweep's order (`sweeps.execute.order_runs`): those expected to take longest
first, so that the last worker to finish is not left with a long run begun late (the protocols'
order, as given, says only the order of the results).

With `on_progress`, each run sends its virtual time and tasks started from its worker, and
the caller hears a `ReplayProgress` every few seconds: the runs done, how far each running run
has got, and a rough ETA. Decision: the time a run ends is not known before it ends, so a run's
progress is the lesser of two shares it must both complete — of the tasks, started, and of the
time the last task would end if every task started on arrival (on the trace hour that time is
5,010 s, and the runs end at 8,400–8,800 s, their queues emptying by then, so the tasks' share
is the one that binds; on a short cut with one long task, the time's). The ETA assumes each run
keeps its pace and that a run still queued takes as long as the mean of those that ended (or,
before any ended, as those running are heading for).
"""

from __future__ import annotations

import json
import queue as queue_module
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import nullcontext
from dataclasses import dataclass
from multiprocessing import Manager
from pathlib import Path
from typing import Any

from drfemu.sweeps.execute import order_runs
from drfemu.sweeps.records import write_atomic
from drfemu.tools.pools import worker_pool
from drfemu.workloads.online import online_case
from drfemu.workloads.points import canonical_params

__all__ = ["ReplayProgress", "run_online_protocols"]

RunPoint = Callable[..., dict[str, Any]]  # (params) or (params, progress) -> result document


def _stamp(workload: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return {"workload": dict(workload), "params": dict(params)}


@dataclass(frozen=True)
class ReplayProgress:
    """Where a trace replay stands: runs done of all, how far each running run has got (the
    module's docstring says how), and a rough ETA in wall seconds (None until some run has
    reported)."""

    done: int
    total: int
    running: dict[str, float]
    eta_s: float | None

    def line(self) -> str:
        """One line for a terminal or a log."""
        running = ", ".join(f"{p} {f:.0%}" for p, f in self.running.items()) or "none"
        eta = "ETA unknown" if self.eta_s is None else f"ETA {wall_duration(self.eta_s)}"
        return f"{self.done} of {self.total} runs done; running: {running}; {eta}"


def wall_duration(seconds: float) -> str:
    """`1 min 05 s`, or `42 s` under a minute."""
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


class _Reporter:
    """A run's progress callback that sends `(protocol, virtual time, tasks started)` to the
    replay's queue from the run's worker (a class, so that it pickles)."""

    def __init__(self, protocol: str, reports: Any) -> None:
        self.protocol, self.reports = protocol, reports

    def __call__(self, now: float, allocations: int) -> None:
        self.reports.put((self.protocol, now, allocations))


class _Pace:
    """The ETA of a replay: when each run was first heard and how far it has got."""

    def __init__(self, end: float, tasks: int, queued: int, workers: int) -> None:
        self.end, self.tasks, self.queued, self.workers = end, max(1, tasks), queued, workers
        self.first_heard: dict[str, float] = {}
        self.share: dict[str, float] = {}
        self.walls: list[float] = []

    def heard(self, protocol: str, now: float, allocations: int) -> None:
        self.first_heard.setdefault(protocol, time.monotonic())
        in_time = now / self.end if self.end > 0 else 1.0
        self.share[protocol] = min(1.0, in_time, allocations / self.tasks)

    def ended(self, protocol: str) -> None:
        started = self.first_heard.pop(protocol, None)
        self.share.pop(protocol, None)
        self.queued -= 1
        if started is not None:
            self.walls.append(time.monotonic() - started)

    def eta(self) -> float | None:
        now = time.monotonic()
        totals = {p: (now - self.first_heard[p]) / f for p, f in self.share.items() if f > 0}
        if not totals and not self.walls:
            return None
        per_run = sum(self.walls) / len(self.walls) if self.walls else sum(totals.values()) / len(totals)
        left = sum(total - (now - self.first_heard[p]) for p, total in totals.items())
        waiting = self.queued - len(self.share)
        return max(0.0, (left + max(0, waiting) * per_run) / self.workers)


def _earlier_result(path: Path) -> dict[str, Any] | None:
    """The result file an earlier replay left at `path`, or None if there is none or it cannot be
    read as one (a run cut short while writing it, say): that protocol is then run again."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "result" in document else None


def run_online_protocols(out: Path, protocols: Sequence[str], run_point: RunPoint, params: Mapping[str, Any],
                         minutes: float = 60.0, load_fraction: float = 0.8, seed: int = 1, workers: int = 2,
                         on_done: Callable[[str, dict[str, Any]], None] | None = None,
                         on_progress: Callable[[ReplayProgress], None] | None = None,
                         every_s: float = 5.0) -> dict[str, dict[str, Any]]:
    """Run `protocols` on the trace replay; returns each protocol's result document. With
    `on_progress`, the runs report from their workers and `on_progress` hears where the replay
    stands every `every_s` seconds of wall time (then `run_point` is called with a second
    argument, the run's progress callback, as `runner.run_point` takes it)."""
    case = online_case(minutes, load_fraction, None, seed)
    out.mkdir(parents=True, exist_ok=True)
    workload_path = out / "workload.json"
    case.save(workload_path)
    source = case.source
    results: dict[str, dict[str, Any]] = {}
    todo: list[str] = []
    for protocol in protocols:
        path = out / f"{protocol}.json"
        stamp = _stamp(source, {**params, "protocol": protocol})
        done = _earlier_result(path)
        if done is not None and done.get("stamp") == stamp:
            results[protocol] = done["result"]
            continue
        todo.append(protocol)
    points = {p: canonical_params({**params, "protocol": p, "workload": str(workload_path)}) for p in todo}
    if not todo:
        return {p: results[p] for p in protocols}
    size = max(1, min(workers, len(todo)))
    last_end = max((t.submit + t.duration for user in case.users for t in user.tasks or ()), default=0.0)
    pace = _Pace(last_end, sum(len(user.tasks or ()) for user in case.users), len(todo), size)
    with worker_pool(size) as pool, \
            (Manager() if on_progress is not None else nullcontext()) as manager:
        reports = manager.Queue() if manager is not None else None
        running: dict[Future[dict[str, Any]], str] = {
            (pool.submit(run_point, points[p], _Reporter(p, reports)) if reports is not None
             else pool.submit(run_point, points[p])): p
            for p in order_runs(points)}
        while running:
            finished, _ = wait(running, timeout=every_s if on_progress is not None else None,
                               return_when=FIRST_COMPLETED)
            while reports is not None:
                try:
                    pace.heard(*reports.get_nowait())
                except queue_module.Empty:
                    break
            for future in finished:
                protocol = running.pop(future)
                result = future.result()
                stamp = _stamp(source, {**params, "protocol": protocol})
                write_atomic(out / f"{protocol}.json", json.dumps({"stamp": stamp, "result": result}) + "\n")
                results[protocol] = result
                pace.ended(protocol)
                if on_done is not None:
                    on_done(protocol, result)
            if on_progress is not None and running:
                on_progress(ReplayProgress(len(protocols) - len(running), len(protocols),
                                           {p: pace.share[p] for p in running.values() if p in pace.share}, pace.eta()))
    return {p: results[p] for p in protocols}


ONLINE_RULES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("c-adrf", "c-adrf", {}),
    ("naive-adrf", "naive-adrf", {}),
    ("cpu", "wmmf", {"wmmf_resource": 0}),
    ("mem", "wmmf", {"wmmf_resource": 1}),
    ("fifo", "fifo", {"head_of_line": True}),
)
"""Seed 002's rules as emulator protocols: (the seed's name, protocol, its parameters). G-CPU and
G-Mem order exactly as CPU and Mem under the seed's β = 1 (`protocols.online_central`)."""


def online_rules(run_point: RunPoint, load_fraction: float = 0.8, tick: float = 0.01, workers: int = 2,
                 minutes: float = 60.0) -> dict[str, Any]:
    """Seed 002 §VI-B on the emulator: each online rule replays the trace's first hour on one pool
    of `load_fraction` × the offered load, as a central protocol starting every task its rule
    allows each tick (`allocations_per_tick = 0`). Decision: the tick is 10 ms, not the
    thesis's 100 ms — a user hands its tasks over one at a time (thesis Algorithm 3), so the tick
    bounds each user to one start per tick, and at 100 ms the trace's bursts (a job of thousands
    of tasks at once) would queue behind that limit rather than behind the rule (docs/policies.md
    measures both). Returns per rule its mean and median RMSE against SWM, its delays and makespan."""
    import tempfile

    case = online_case(minutes, load_fraction, None, 1, pool=True)
    rows: list[dict[str, Any]] = []
    rmse: dict[str, list[float]] = {}
    delays: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "pool.json"
        case.save(path)
        points = {name: canonical_params({"workload": str(path), "protocol": protocol, "tick": tick,
                                          "allocations_per_tick": 0, "stall_ticks": 10**9, **extra})
                  for name, protocol, extra in ONLINE_RULES}
        with worker_pool(max(1, min(workers, len(points)))) as pool:
            futures = {name: pool.submit(run_point, params) for name, params in points.items()}
            results = {name: future.result() for name, future in futures.items()}
    for name, _, _ in ONLINE_RULES:
        result = results[name]
        swm = result["swm"]
        rmse[name] = swm.get("rmse", [])
        delays[name] = result["queueing_delay_quantiles_s"]
        rows.append({"rule": name, "protocol": result["protocol"], "status": result["status"],
                     "tasks": result["ledger"]["finished"], "mean_rmse": swm.get("mean_rmse"),
                     "median_rmse": swm.get("median_rmse"), "median_delay_s": result["queueing_delay_s"]["p50"],
                     "p90_delay_s": delays[name][90] if delays[name] else None,
                     "makespan_s": result["run_time_s"], "wall_time_s": result["wall_time_s"]})
    return {"experiment": "online", "minutes": minutes, "tasks": case.task_count, "users": len(case.users),
            "capacity": list(case.servers[0].capacity), "offered_load": case.source["offered_load"],
            "load_fraction": load_fraction, "tick_s": tick, "rows": rows, "rmse": rmse, "delay_quantiles": delays}
