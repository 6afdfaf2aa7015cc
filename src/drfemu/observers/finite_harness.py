"""The run harness for tasks that end (finite workloads; SPEC §5, issue 15).

The same observer as `observers.harness.Harness` — global knowledge the protocols
never consult — for users whose tasks arrive, run and end. It follows the nodes' events:
`TaskSubmitted` (a user's next tasks, in order), `TaskAllocated` and `TaskFinished`. It
- checks the capacity invariant on every start, on its own account of every server;
- keeps every user's `G_i`, the dominant share of what its running tasks hold (it falls when
  one ends);
- judges every start with the error oracle: starting user i's task is an error at tolerance τ
  when another user j with a task waiting (submitted, not started) that fits on some server
  right now has `G_i > (1+τ)·G_j` (shares compared with the relative margin 1e-9);
- samples, every `sample_every` seconds, the fairness of the users present (with a task
  waiting, being placed or running): minimum `G_i`, Gini and Jain, plus utilisation and the
  tasks waiting and running; and, every `swm_every` seconds, what seed 002's RMSE against the
  SWM optimum needs (each present user's share, the demand of its latest task, and the share
  it would hold with every present task running);
- ends the run as *finished* once every task of the workload has finished, as *stalled* when
  tasks wait, none runs and nothing was started for `stall_ticks` ticks (an idle cluster
  that does not place a task that fits on it — every task fits somewhere, the workload is
  validated so), counted from the latest of the last start, the last end and the arrival that
  ended a stretch with nothing waiting (issue 52: a task that arrived after a quiet stretch
  longer than that was judged stalled at once), and as *time cap* at `max_time`.

With faults (the run's fault injector in `faults`): a crashed server's tasks are released at
the crash (their users' `G_i` fall), it is no place a waiting task could fit until it
recovers, and a task its user gave up (`TaskResubmitted`: its placement was cut off) leaves
the waiting tasks — its copy arrives as a new `TaskSubmitted`. No stall is declared while an
actor is down, nor sooner than `stall_ticks` after the last crash or recovery. The run
finishes when every task of the workload has finished, through one of its copies; a copy of
a task that had already finished (a rerun: see `observers.ledger`) frees its room
and share when it ends but does not count again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from drfemu.kernel.events import (
    ServerCrashed,
    ServerRecovered,
    TaskAllocated,
    TaskFinished,
    TaskResubmitted,
    TaskSubmitted,
)
from drfemu.kernel.fairness import gini, jain
from drfemu.kernel.resources import REL_TOL, CapacityViolation, Vector, dominant_share, total_capacity
from drfemu.nodes.port import RuntimePort
from drfemu.observers.harness import (
    FINISHED,
    SHARE_MARGIN,
    STALLED,
    FaultState,
    Limits,
    Listeners,
    RunObserver,
)
from drfemu.observers.ledger import LedgerViolation
from drfemu.observers.observer import RunEnd
from drfemu.observers.swm import swm_comparison
from drfemu.schema.result import FiniteFairness, Section, TimeAveraged, finite_or_none
from drfemu.schema.workload import Workload

__all__ = ["FINISHED", "FiniteHarness"]


class FiniteHarness(RunObserver):
    """Observes one run of a finite workload. Servers are actors 0..S-1; `user_actors[k]` is user k's."""

    def __init__(self, workload: Workload, user_actors: Sequence[int], limits: Limits, listeners: Listeners, *,
                 faults: FaultState | None = None, sample_every: float = 0.0, swm_every: float = 0.0) -> None:
        super().__init__(limits, listeners, faults)
        capacities = [s.capacity for s in workload.servers]
        tasks = workload.task_count
        self.labels = [u.id for u in workload.users]
        self.resources = workload.resources
        self.capacity = np.array(capacities, dtype=float)
        self.free = self.capacity.copy()
        self.running_on = [0] * len(capacities)
        self.tasks_on: list[dict[tuple[int, int], Any]] = [{} for _ in capacities]  # (user, task) -> demand
        self.up = np.ones(len(capacities), dtype=bool)
        self.total = total_capacity([tuple(c) for c in capacities])
        self._total = np.array(self.total)
        self.user_index = {actor: k for k, actor in enumerate(user_actors)}
        self.user_actors = list(user_actors)
        n = len(user_actors)
        self.held = np.zeros((n, len(self.total)))
        self.running = [0] * n
        self.shares = np.zeros(n)
        self.unstarted: list[deque[tuple[int, Vector]]] = [deque() for _ in range(n)]
        self.latest: list[Vector | None] = [None] * n
        self.tasks = tasks
        self.started = [0] * n
        self.finished = 0
        self.origin: dict[tuple[int, int], int] = {}  # (user, copy) -> the workload task it copies
        self.done: set[tuple[int, int]] = set()  # (user, workload task) finished
        self.waiting = 0  # submitted, not started (at the user or being placed)
        self.running_total = 0
        self.last_finish = 0.0
        self.wait_began = 0.0  # when tasks last began to wait with none waiting before
        self.sample_every = sample_every
        self.swm_every = swm_every
        self.unplaceable: list[int] = []  # the workload's validation refuses tasks that fit nowhere
        self.series: dict[str, list[float]] = {key: [] for key in (
            "time", "users_present", "min_share", "gini", "jain", "waiting", "running")}
        self.series.update({f"utilization_{r}": [] for r in range(len(self.total))})
        self.swm_samples: list[dict[str, Any]] = []

    # -- events ---------------------------------------------------------------------------
    def subscribe(self, runtime: RuntimePort) -> None:
        runtime.subscribe(TaskSubmitted, self.on_submitted)
        runtime.subscribe(TaskAllocated, self.on_allocated)
        runtime.subscribe(TaskFinished, self.on_finished)
        runtime.subscribe(TaskResubmitted, self.on_resubmitted)
        runtime.subscribe(ServerCrashed, self.on_crashed)
        runtime.subscribe(ServerRecovered, self.on_recovered)
        if self.sample_every > 0:
            runtime.every(self.sample_every, hooks=[self.sample])
        if self.swm_every > 0:
            runtime.every(self.swm_every, hooks=[self.sample_swm])

    def on_submitted(self, event: TaskSubmitted) -> None:
        k = self.user_index[event.user]
        self.unstarted[k].append((event.task, event.demand))
        self.latest[k] = event.demand
        if not self.waiting:
            self.wait_began = event.time
        self.waiting += 1

    def on_allocated(self, event: TaskAllocated) -> None:
        k = self.user_index[event.user]
        now, server, demand = event.time, event.server, event.demand
        free = self.free[server]
        limit = free + REL_TOL * self.capacity[server]
        if any(d > f for d, f in zip(demand, limit)):
            raise CapacityViolation(
                f"capacity invariant broken at t={now:.6f}s: server {server} holds {tuple(free.tolist())} free "
                f"and was given task {event.task} of user {k} needing {demand}")
        queue = self.unstarted[k]
        if not queue or queue[0][0] != event.task:
            head = queue[0][0] if queue else None
            raise LedgerViolation(f"user {k} started task {event.task} out of order (its next is {head})")
        before = float(self.shares[k])
        flags = self._judge(k, before)
        queue.popleft()
        self.waiting -= 1
        free -= demand
        self.running_on[server] += 1
        self.tasks_on[server][(k, event.task)] = demand
        self.held[k] += demand
        self.running[k] += 1
        self.running_total += 1
        self.shares[k] = dominant_share(self.held[k].tolist(), self.total)
        self.started[k] += 1
        self.allocations += 1
        self.last_allocation = now
        if self._log is not None:
            self._log("allocation", time=now, user=k, server=server, task=event.task, share_before=before,
                      share_after=float(self.shares[k]), error=flags[0])

    def on_finished(self, event: TaskFinished) -> None:
        k = self.user_index[event.user]
        server = event.server
        self.running_on[server] -= 1
        del self.tasks_on[server][(k, event.task)]
        if self.running_on[server]:
            self.free[server] += event.demand
        else:
            self.free[server] = self.capacity[server]  # as the node does: no residue once it runs nothing
        self._release(k, event.demand)
        root = (k, self.origin.get((k, event.task), event.task))
        if root in self.done:
            return  # a rerun's end
        self.done.add(root)
        self.finished += 1
        self.last_finish = event.time
        if self.finished == self.tasks:
            self.finish(FINISHED, "every task of the workload finished", event.time)

    def _release(self, k: int, demand: Any) -> None:
        self.running[k] -= 1
        self.running_total -= 1
        if self.running[k]:
            self.held[k] -= demand
        else:
            self.held[k] = 0.0
        self.shares[k] = dominant_share(self.held[k].tolist(), self.total)

    def on_crashed(self, event: ServerCrashed) -> None:
        server = event.actor
        if server >= len(self.capacity) or not self.up[server]:
            return  # a user, the gateway or the scheduler
        for (k, _), demand in self.tasks_on[server].items():
            self._release(k, demand)
        self.tasks_on[server] = {}
        self.running_on[server] = 0
        self.free[server] = self.capacity[server]
        self.up[server] = False

    def on_recovered(self, event: ServerRecovered) -> None:
        if event.actor < len(self.capacity):
            self.up[event.actor] = True

    def on_resubmitted(self, event: TaskResubmitted) -> None:
        k = self.user_index[event.user]
        self.origin[(k, event.again)] = self.origin.get((k, event.task), event.task)
        queue = self.unstarted[k]
        for i, (task, _) in enumerate(queue):
            if task == event.task:
                del queue[i]
                self.waiting -= 1
                return

    def _judge(self, k: int, share: float) -> tuple[bool, ...]:
        lower = [j for j in np.flatnonzero(self.shares * (1.0 + SHARE_MARGIN) < share).tolist()
                 if j != k and self.unstarted[j]]
        lowest = None
        if lower:
            heads = np.array([self.unstarted[j][0][1] for j in lower])
            limit = (self.free + REL_TOL * self.capacity)[self.up]
            fits = np.all(heads[:, None, :] <= limit[None, :, :], axis=2).any(axis=1)
            fitting = [self.shares[j] for j, ok in zip(lower, fits.tolist()) if ok]
            if fitting:
                lowest = float(min(fitting))
        return self.flag_errors(share, lowest)

    # -- samples --------------------------------------------------------------------------
    def lowest_wanting(self) -> int | None:
        """The actor of the user with the lowest share that has a task waiting."""
        wanting = [k for k in range(len(self.unstarted)) if self.unstarted[k]]
        if not wanting:
            return None
        return self.user_actors[min(wanting, key=lambda k: (self.shares[k], k))]

    def min_share(self) -> float:
        """The lowest `G_i` of the users present now (nan with none; the fault timeline samples it)."""
        present = self._present()
        return float(self.shares[present].min()) if present else float("nan")

    def share_list(self) -> list[float]:
        """Every user's dominant share now, in workload order (the sampler reads it)."""
        return [float(x) for x in self.shares]

    def queue(self) -> tuple[int, int] | None:
        """The tasks waiting (submitted, not started) and running now (the sampler reads it)."""
        return self.waiting, self.running_total

    def _present(self) -> list[int]:
        return [k for k in range(len(self.running)) if self.running[k] or self.unstarted[k]]

    def sample(self, now: float, _: int) -> None:
        present = self._present()
        shares = self.shares[present].tolist()
        s = self.series
        s["time"].append(now)
        s["users_present"].append(len(present))
        s["min_share"].append(min(shares) if shares else float("nan"))
        s["gini"].append(gini(shares) if shares else float("nan"))
        s["jain"].append(jain(shares) if shares else float("nan"))
        s["waiting"].append(self.waiting)
        s["running"].append(self.running_total)
        for r, u in enumerate(self.utilization()):
            s[f"utilization_{r}"].append(u)

    def sample_swm(self, now: float, _: int) -> None:
        present = self._present()
        wanted = []
        for k in present:
            total = self.held[k].copy()
            for _, demand in self.unstarted[k]:
                total += demand
            wanted.append(dominant_share(total.tolist(), self.total))
        self.swm_samples.append({"time": now, "users": present, "shares": self.shares[present].tolist(),
                                 "demands": [list(self.latest[k] or ()) for k in present], "wanted": wanted})

    # -- ticks ----------------------------------------------------------------------------
    def on_tick(self, now: float, tick: int) -> None:
        if self.outcome is not None or self.time_capped(now):
            return
        quiet = self.quiet_since()
        if (self.waiting and not self.running_total and quiet is not None
                and now - max(quiet, self.last_finish, self.wait_began) >= self.stall_ticks * self.tick - REL_TOL):
            self.finish(STALLED, self.because(f"{self.waiting} task(s) waited {self.stall_ticks} ticks on an idle "
                                              "cluster"), now)
        else:
            self.report_progress(now, tick)

    # -- results --------------------------------------------------------------------------
    def sections(self, end: RunEnd) -> list[Section]:
        """What this harness measured: how the run ended, its errors, fairness over time."""
        return [self.outcome_section(self.last_finish, end.now), self.errors_section(), self.fairness()]

    def fairness(self) -> FiniteFairness:
        """Fairness over time (the final allocation of a finished run is empty): time averages of
        the samples, the sampled series, the SWM comparison, and each user's started tasks. The
        thesis's end-of-run metrics are the time averages (`min_dominant_share`, `gini`, `jain`)."""
        averages = self.time_averages()
        series = {key: [finite_or_none(x) for x in values] for key, values in self.series.items()}
        utilization = {name: averages[f"utilization_{r}"] for r, name in enumerate(self.resources)}
        for r, name in enumerate(self.resources):
            series[f"utilization_{name}"] = series.pop(f"utilization_{r}")
        return FiniteFairness(
            min_dominant_share=averages["min_share"], gini=averages["gini"], jain=averages["jain"],
            time_averaged=TimeAveraged(min_share=averages["min_share"], gini=averages["gini"], jain=averages["jain"],
                                       utilization=utilization),
            utilization=utilization, series=series, swm=swm_comparison(self.swm_samples, self.total),
            tasks={self.labels[k]: n for k, n in enumerate(self.started)}, unplaceable_users=[])

    def utilization(self) -> list[float]:
        used = (self.capacity - self.free).sum(axis=0)
        return [float(u / t) if t > 0 else 0.0 for u, t in zip(used, self._total)]

    def time_averages(self) -> dict[str, float | None]:
        """Means over the samples with some user present."""
        s = self.series
        keep = [i for i, n in enumerate(s["users_present"]) if n]
        out: dict[str, float | None] = {}
        for key in ("min_share", "gini", "jain"):
            out[key] = float(np.mean([s[key][i] for i in keep])) if keep else None
        for r in range(len(self.total)):
            values = s[f"utilization_{r}"]
            out[f"utilization_{r}"] = float(np.mean(values)) if values else None
        return out
