"""The task ledger: where every submitted task is, and how long each waited (issue 15).

It follows the nodes' events: `TaskSubmitted` (the task waits at its user), `TaskDispatched`
(it is out being placed: the handshake began), `TaskAllocated` (it runs) and `TaskFinished`
(it ended); and, with faults (issue 16), the environment's `ServerCrashed` (the tasks running
there are *killed*) and the users' `TaskResubmitted` (a killed task, or one whose placement a
crash cut off, is given up — *resubmitted* — and its demand submitted again as a new task).
A finished task can be submitted again too, and is counted as a *rerun*: when its start and
end notices were both lost and its server crashed before repeating the end, its user cannot
know it ran (at-least-once execution, the price of a crash that took the only witness).
Every task is in exactly one of these six states; a transition out of the wrong
state — a task started twice, a start for a task never submitted — is a protocol bug and
raises `LedgerViolation`. At the end, `check` compares the ledger with the users' own account
of their tasks and with what the workload submitted by then: any task missing from the ledger
is counted `lost` (always reported, 0 in a correct run), and the users must agree on what was
submitted and may only lag behind the servers (a start or an end whose notice is still on
the wire when the run stops) — anything else raises.

Queueing delay is start − submit, per task, in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from drfemu.kernel.events import (
    ServerCrashed,
    TaskAllocated,
    TaskDispatched,
    TaskFinished,
    TaskResubmitted,
    TaskSubmitted,
)
from drfemu.nodes.port import Subscriber
from drfemu.observers.observer import RunEnd
from drfemu.schema.result import Ledger, Section

__all__ = ["STATES", "LedgerViolation", "TaskLedger"]

WAITING, PLACING, RUNNING, FINISHED = "waiting", "placing", "running", "finished"
KILLED, RESUBMITTED = "killed", "resubmitted"
STATES = (WAITING, PLACING, RUNNING, FINISHED, KILLED, RESUBMITTED)


class LedgerViolation(RuntimeError):
    """A task changed state in a way no correct protocol allows."""


class TaskLedger:
    """Every task's state by `(user actor, task id)`, the counts per state, and the delays."""

    def __init__(self, names: Mapping[int, str] | None = None) -> None:
        """`names`: each user's name by its actor id, for the delays per user (default: the id)."""
        self.state: dict[tuple[int, int], str] = {}
        self.submitted_at: dict[tuple[int, int], float] = {}
        self.counts = dict.fromkeys(STATES, 0)
        self.delays: list[float] = []
        self.names: Mapping[int, str] = names or {}
        self.user_delays: dict[int, list[float]] = {}  # by user actor, in start order
        self.server_of: dict[tuple[int, int], int] = {}  # running tasks' servers
        self.reruns = 0

    def _move(self, key: tuple[int, int], before: str, after: str, what: str) -> None:
        state = self.state.get(key)
        if state != before:
            raise LedgerViolation(f"task {key[1]} of user {key[0]} {what} while {state or 'never submitted'}")
        self.state[key] = after
        self.counts[before] -= 1
        self.counts[after] += 1

    def on_submitted(self, event: TaskSubmitted) -> None:
        key = (event.user, event.task)
        if key in self.state:
            raise LedgerViolation(f"task {event.task} of user {event.user} submitted twice")
        self.state[key] = WAITING
        self.submitted_at[key] = event.time
        self.counts[WAITING] += 1

    def on_dispatched(self, event: TaskDispatched) -> None:
        self._move((event.user, event.task), WAITING, PLACING, "dispatched")

    def on_allocated(self, event: TaskAllocated) -> None:
        key = (event.user, event.task)
        self._move(key, PLACING, RUNNING, "started")
        delay = event.time - self.submitted_at.pop(key)
        self.delays.append(delay)
        self.user_delays.setdefault(event.user, []).append(delay)
        self.server_of[key] = event.server

    def on_finished(self, event: TaskFinished) -> None:
        key = (event.user, event.task)
        self._move(key, RUNNING, FINISHED, "finished")
        del self.server_of[key]

    def on_crashed(self, event: ServerCrashed) -> None:
        for key in [k for k, server in self.server_of.items() if server == event.actor]:
            self._move(key, RUNNING, KILLED, "killed")
            del self.server_of[key]

    def on_resubmitted(self, event: TaskResubmitted) -> None:
        key = (event.user, event.task)
        state = self.state.get(key)
        if state == FINISHED:
            self.reruns += 1  # it ended unheard on a server that then crashed: its user runs it again
            return
        if state not in (KILLED, PLACING):
            raise LedgerViolation(f"task {event.task} of user {event.user} resubmitted while "
                                  f"{state or 'never submitted'}")
        self._move(key, state, RESUBMITTED, "resubmitted")
        self.submitted_at.pop(key, None)

    def subscribe(self, runtime: Subscriber) -> None:
        runtime.subscribe(TaskSubmitted, self.on_submitted)
        runtime.subscribe(TaskDispatched, self.on_dispatched)
        runtime.subscribe(TaskAllocated, self.on_allocated)
        runtime.subscribe(TaskFinished, self.on_finished)
        runtime.subscribe(ServerCrashed, self.on_crashed)
        runtime.subscribe(TaskResubmitted, self.on_resubmitted)

    @property
    def tracked(self) -> int:
        return len(self.state)

    def check(self, users: Mapping[int, Mapping[str, int]], expected: int | None = None) -> dict[str, int]:
        """`{state: count, "lost": n}` after the run. `users[actor]` is each user's own count per
        state and of tasks `submitted`; `expected`, when known, is how many tasks the workload
        submitted by the run's end."""
        own = dict.fromkeys(STATES, 0)
        submitted = 0
        for counts in users.values():
            submitted += counts["submitted"]
            for s in STATES:
                own[s] += counts.get(s, 0)
        done = self.counts[RUNNING] + self.counts[FINISHED] + self.counts[KILLED]  # a kill its user has not heard of
        if (submitted != self.tracked or own[RUNNING] + own[FINISHED] > done
                or own[FINISHED] > self.counts[FINISHED]):
            raise LedgerViolation(f"the users count {submitted} tasks as {own}, the ledger {self.tracked} as "
                                  f"{self.counts}")
        due = max(submitted, expected or 0)
        return {**self.counts, "rerun": self.reruns, "lost": due - self.tracked}

    def sections(self, end: RunEnd) -> list[Section]:
        """The tasks' part of the result: the ledger `check`ed against the users' own counts and
        what the workload submitted, and the queueing delays."""
        return [Ledger(ledger=self.check(end.users, end.submitted), queueing_delay_s=self.delay_percentiles(),
                       queueing_delay_quantiles_s=self.delay_quantiles(),
                       queueing_delay_p99_by_user_s=self.user_p99())]

    def user_p99(self) -> dict[str, float]:
        """Each user's p99 queueing delay over its started tasks (users none started are absent),
        by name, in the order users first started a task."""
        return {self.names.get(user, str(user)): float(np.percentile(np.asarray(delays), 99))
                for user, delays in self.user_delays.items()}

    def delay_quantiles(self, points: int = 100) -> list[float]:
        """The delays at quantiles 0, 1/points, …, 1 (a CDF to plot; empty before any start)."""
        if not self.delays:
            return []
        return np.quantile(np.asarray(self.delays), np.linspace(0.0, 1.0, points + 1)).tolist()

    def delay_percentiles(self) -> dict[str, float | None]:
        """p50, p95, p99 and the mean of the started tasks' queueing delays (None before any start)."""
        if not self.delays:
            return {"p50": None, "p95": None, "p99": None, "mean": None}
        values = np.asarray(self.delays)
        p50, p95, p99 = np.percentile(values, [50, 95, 99]).tolist()
        return {"p50": p50, "p95": p95, "p99": p99, "mean": float(values.mean())}
