"""The determinism checker (issue 16): same configuration and seed ⇒ the same run, event by event.

Each run (canonical parameters, as a sweep names them) is run three times:
1. the **reference**, here, collecting one hash per event (`nodes.trace`);
2. **again here**, checked against the reference event by event — this finds state that
   leaks from one run into the next and draws from an unseeded generator;
3. **in a fresh interpreter** (a `spawn` process pool), checked the same way — this finds
   what depends on the process: string-hash salting (set and dict order of text keys),
   import-time state, the address of an object. Decision: `spawn`, not `fork`, because a
   forked child shares the parent's hash salt and would hide exactly those.

A checked run stops at the first event whose hash differs and reports that event and the
few before it (the same in both runs); the reference is then replayed here up to that event
to say what it did there. Runs whose events agree are then compared by their result
documents, key by key, except the wall-clock figures (`WALL_CLOCK`).
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.nodes.trace import Diverged, EventTrace
from drfemu.tools.pools import worker_pool

__all__ = ["WALL_CLOCK", "Divergence", "RunCheck", "check_runs", "traced_run"]

WALL_CLOCK = ("wall_time_s", "events_per_s")
"""Result keys that measure the machine, not the run."""


@dataclass(frozen=True)
class Divergence:
    """Where a checked run (`against`: "rerun" or "process") first did something else."""

    against: str
    index: int  # the event's number, from 0
    at_s: float
    expected: str  # what the reference did there
    got: str  # what the checked run did there
    context: tuple[str, ...]  # the events just before it, the same in both runs

    def describe(self) -> str:
        where = "run again in this process" if self.against == "rerun" else "run in a fresh process"
        return (f"{where}: first divergent event #{self.index:,} at {self.at_s:.6f} s: expected {self.expected}; "
                f"got {self.got}")


@dataclass(frozen=True)
class RunCheck:
    """The verdict on one run."""

    run: str
    events: int
    digest: str  # of the reference's event hashes
    divergences: tuple[Divergence, ...]
    result_differences: dict[str, tuple[str, ...]]  # against -> the result keys whose values differ

    @property
    def ok(self) -> bool:
        return not self.divergences and not self.result_differences

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "ok": self.ok, "events": self.events, "digest": self.digest,
                "divergences": [asdict(d) for d in self.divergences],
                "result_differences": {k: list(v) for k, v in self.result_differences.items()}}


def _comparable(result: Mapping[str, Any]) -> dict[str, Any]:
    """The result as JSON would carry it (tuples as lists, non-finite as null), minus wall-clock keys."""
    document = json.loads(json.dumps({k: v for k, v in result.items() if k not in WALL_CLOCK}))
    return document  # type: ignore[no-any-return]


Build = Callable[[Mapping[str, Any]], RunConfig]
"""Canonical run parameters → the run's config (`workloads.points.build_run_config`; a module-level
function, so that a spawned process can be handed it)."""


def traced_run(params: Mapping[str, Any], build: Build, reference: bytes | None = None,
               describe_at: int | None = None) -> dict[str, Any]:
    """Run canonical `params` (configured by `build`) under an `EventTrace`. Returns `hashes`
    (bytes, without a reference), `events`, `digest` and `result`, or — if the run parted from
    `reference` or reached `describe_at` — `diverged`: the event's number, time, line and context."""
    trace = EventTrace(reference, describe_at)
    try:
        result = run_emulation(build(params), trace=trace).to_dict()
    except Diverged as stop:
        return {"diverged": {"index": stop.index, "at_us": stop.at_us, "line": stop.line, "context": stop.context,
                             "agrees": stop.agrees}}
    outcome: dict[str, Any] = {"events": trace.count, "digest": trace.digest(), "result": _comparable(result)}
    if reference is None:
        outcome["hashes"] = trace.hashes.tobytes()
    return outcome


def _reference_event(params: Mapping[str, Any], build: Build, reference: bytes, index: int) -> str:
    """What the reference run did at event `index`, by replaying it here up to there."""
    if index >= len(reference) // 8:
        return "(the run had ended)"
    replay = traced_run(params, build, reference, describe_at=index)
    stop = replay.get("diverged")
    if stop is None:
        return "(not found: the replay ended early)"
    if stop["index"] != index:
        return f"(unknown: replayed here, the reference parted from itself earlier, at event #{stop['index']:,})"
    if not stop["agrees"]:
        return f"(unknown: replayed here, the reference did something else there too: {stop['line']})"
    return str(stop["line"])


def _verdict(against: str, params: Mapping[str, Any], build: Build, reference: dict[str, Any],
             checked: dict[str, Any]) -> tuple[list[Divergence], dict[str, tuple[str, ...]]]:
    stop = checked.get("diverged")
    if stop is None and checked["events"] < reference["events"]:
        stop = {"index": checked["events"], "at_us": -1, "line": "(the run ended)", "context": []}
    if stop is not None:
        at_s = stop["at_us"] / 1e6 if stop["at_us"] >= 0 else float("nan")
        expected = _reference_event(params, build, reference["hashes"], stop["index"])
        return [Divergence(against, stop["index"], at_s, expected, stop["line"], tuple(stop["context"]))], {}
    keys = sorted(k for k in set(reference["result"]) | set(checked["result"])
                  if reference["result"].get(k) != checked["result"].get(k))
    return [], ({against: tuple(keys)} if keys else {})


def check_runs(runs: Sequence[tuple[str, Mapping[str, Any]]], build: Build, workers: int = 1) -> Iterator[RunCheck]:
    """Check each `(run id, canonical params)`, configured by `build`; yields the verdicts in
    order. `workers`: the size of the fresh-process pool (at least 1; the reference and the rerun
    run here, while the pool replays earlier runs)."""
    context = multiprocessing.get_context("spawn")
    with worker_pool(max(1, workers), mp_context=context) as pool:
        pending: list[tuple[str, Mapping[str, Any], dict[str, Any], dict[str, Any], Future[dict[str, Any]]]] = []
        for run, params in runs:
            reference = traced_run(params, build)
            remote = pool.submit(traced_run, dict(params), build, reference["hashes"])
            rerun = traced_run(params, build, reference["hashes"])
            pending.append((run, params, reference, rerun, remote))
            while pending and (pending[0][4].done() or len(pending) > max(1, workers)):
                yield _finish(build, *pending.pop(0))
        while pending:
            yield _finish(build, *pending.pop(0))


def _finish(build: Build, run: str, params: Mapping[str, Any], reference: dict[str, Any], rerun: dict[str, Any],
            remote: Future[dict[str, Any]]) -> RunCheck:
    divergences: list[Divergence] = []
    differences: dict[str, tuple[str, ...]] = {}
    for against, checked in (("rerun", rerun), ("process", remote.result())):
        found, differ = _verdict(against, params, build, reference, checked)
        divergences += found
        differences.update(differ)
    return RunCheck(run, reference["events"], reference["digest"], tuple(divergences), differences)
