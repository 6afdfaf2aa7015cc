"""The run harness: an observer with global knowledge that protocols never consult (SPEC §5).

On every allocation it
- checks the capacity invariant on its own accounting of every server (a violation raises
  `CapacityViolation` and aborts the run);
- judges the allocation with the error oracle: allocating for user i is an error at tolerance
  τ when another user j whose next task fits somewhere has `G_i > (1+τ)·G_j` (τ = 0: any
  such j with a lower share). Shares are compared with a relative margin of 1e-9 so that two
  users whose shares are equal on paper but differ in the last float bit do not count;
- updates `G_i`, and ends the run as *saturated* once no user's next task fits on any server.

A blocking rule (C-ADRF) that holds every allocation back for a user whose task fits nowhere
(`AllocationBlocked`) ends the run as *blocked* once nothing can change that — users whose
tasks never end, no fault left to come, every user whose task fits among those the rule
weighed: the rule leaves fitting tasks by design, so this is its end, not a stall (issue 52).
On every tick it ends the run as *stalled* when nothing was allocated for `stall_ticks` ticks,
and as *time cap* when virtual time reaches `max_time`. With faults (`faults`, the run's fault injector): a crashed server's tasks are released at the
crash (their users' `G_i` fall then: the truth, whatever the users have heard), and its room
counts for nothing until it recovers; saturation waits until the injector is `settled` (no
server down, no crash or recovery planned), and a wait while an actor is down is never a
stall (the stall clock restarts at the last crash or recovery). Users whose single task fits on no
empty server are *unplaceable*: reported, left out of saturation and error judgements and of
the fairness metrics, while the run goes on for the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from drfemu.kernel.events import AllocationBlocked, ServerCrashed, ServerRecovered, TaskAllocated
from drfemu.kernel.fairness import gini, jain, ratio_20_20, sample_std
from drfemu.kernel.resources import (
    REL_TOL,
    CapacityViolation,
    Vector,
    dominant_share,
    fits,
    take,
    total_capacity,
)
from drfemu.nodes.port import Subscriber
from drfemu.observers.observer import RunEnd
from drfemu.protocols.devices import EMPTY, Devices, device_matrix, device_usable
from drfemu.protocols.fragmentation import fragmented_matrix
from drfemu.schema.result import EndlessFairness, Errors, Outcome, Section, finite_or_none
from drfemu.schema.result_blocks import FirstBlocked
from drfemu.schema.workload import Workload

__all__ = ["BLOCKED", "FINISHED", "SATURATED", "STALLED", "TIME_CAP", "TOLERANCES", "FaultState", "Harness", "Limits",
           "Listeners", "RunObserver", "RunOutcome", "error_series"]

TOLERANCES: tuple[float, ...] = (0.0, 0.01, 0.05, 0.1, 0.15)
SHARE_MARGIN = 1e-9
BLOCK_CELLS = 1 << 22  # booleans a block of servers × users × resources compares at once (`_server_blocks`)

SATURATED, STALLED, FINISHED, TIME_CAP, BLOCKED = "saturated", "stalled", "finished", "time-cap", "blocked"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    status: str
    reason: str
    end_time: float


@dataclass(frozen=True, slots=True)
class Limits:
    """When a run ends without saturating: `stall_ticks` ticks of `tick` seconds without an
    allocation, or `max_time` seconds of virtual time."""

    tick: float
    stall_ticks: int
    max_time: float


@dataclass(frozen=True, slots=True)
class Listeners:
    """Who hears a harness: the run's end (`on_finish`, always), each allocation (`log`) and,
    now and then, the virtual time and the allocations so far (`progress`)."""

    on_finish: Callable[[RunOutcome], None]
    log: Callable[..., Any] | None = None
    progress: Callable[[float, int], None] | None = None


class FaultState(Protocol):
    """What a harness asks of the run's faults (the fault injector answers)."""

    last_change: float

    def settled(self) -> bool: ...

    def standing(self) -> str: ...

    def pending(self) -> str: ...


class RunObserver:
    """What every harness shares: the end of the run, progress reports, and the error flags of
    its allocations (bit i of byte n: allocation n was an error at tolerance i). `faults` is the
    run's fault state (None: a run without faults)."""

    def __init__(self, limits: Limits, listeners: Listeners, faults: FaultState | None,
                 tolerances: Sequence[float] = TOLERANCES) -> None:
        self.tolerances = tuple(tolerances)
        if len(self.tolerances) > 8:
            raise ValueError("at most 8 tolerances (their error flags share one byte per allocation)")
        self.errors = [0] * len(self.tolerances)
        self._error_flags = bytearray()
        self.allocations = 0
        self.last_allocation = 0.0
        self.tick = limits.tick
        self.stall_ticks = limits.stall_ticks
        self.max_time = limits.max_time
        self.outcome: RunOutcome | None = None
        self._on_finish = listeners.on_finish
        self._log = listeners.log
        self._progress = listeners.progress
        self._last_progress_tick = 0
        self.faults = faults
        self.down: set[int] = set()  # crashed servers

    def quiet_since(self) -> float | None:
        """When the cluster last changed by a fault (None while a crash or recovery is still
        planned: no stall until the cluster has its final shape)."""
        if self.faults is None:
            return self.last_allocation
        if not self.faults.settled():
            return None
        return max(self.last_allocation, self.faults.last_change)

    def settled(self) -> bool:
        return self.faults is None or self.faults.settled()

    def because(self, reason: str) -> str:
        """`reason`, with the faults that decided it: what is down for good, or (at the time cap)
        what was still planned."""
        if self.faults is None:
            return reason
        why = self.faults.standing() or self.faults.pending()
        return f"{reason} ({why})" if why else reason

    def flag_errors(self, share: float, lowest: float | None) -> tuple[bool, ...]:
        """Judge an allocation to a user at `share` while the lowest competing share is `lowest`
        (None: nobody competes), and record the flags."""
        bits = 0
        flags = []
        for i, tau in enumerate(self.tolerances):
            flag = lowest is not None and share > (1.0 + tau) * lowest * (1.0 + SHARE_MARGIN)
            flags.append(flag)
            if flag:
                self.errors[i] += 1
                bits |= 1 << i
        self._error_flags.append(bits)
        return tuple(flags)

    def time_capped(self, now: float) -> bool:
        """End the run at the time cap if it is reached; True if so."""
        if now >= self.max_time - REL_TOL:
            self.finish(TIME_CAP, self.because(f"virtual time reached the cap of {self.max_time:g}s"), now)
            return True
        return False

    def report_progress(self, now: float, tick: int) -> None:
        if self._progress is not None and tick - self._last_progress_tick >= 50:
            self._last_progress_tick = tick
            self._progress(now, self.allocations)

    def finish(self, status: str, reason: str, end_time: float) -> None:
        if self.outcome is None:
            self.outcome = RunOutcome(status, reason, end_time)
            self._on_finish(self.outcome)

    def error_ratios(self) -> list[float]:
        return [e / self.allocations if self.allocations else 0.0 for e in self.errors]

    def error_series(self, points: int = 100) -> dict[str, list[float] | list[int]]:
        return error_series(self._error_flags, self.tolerances, points)

    def outcome_section(self, run_time: float, now: float) -> Outcome:
        """How the run ended (`run_time`: its run-time; `now`: the virtual time it ended at)."""
        outcome = self.outcome
        assert outcome is not None, "the run has not ended"
        return Outcome(saturated=outcome.status == SATURATED, stalled=outcome.status == STALLED,
                       finished=outcome.status == FINISHED, status=outcome.status, end_reason=outcome.reason,
                       run_time_s=run_time, virtual_time_s=now, allocations=self.allocations)

    def errors_section(self) -> Errors:
        ratios = self.error_ratios()
        return Errors(error_ratio=ratios[0],
                      error_ratio_by_tolerance={f"{tau:g}": r for tau, r in zip(self.tolerances, ratios)},
                      error_series=self.error_series())


class Harness(RunObserver):
    """Observes one run of endless users. Servers are actors 0..S-1; `user_actors[k]` is user k's
    actor id."""

    def __init__(self, workload: Workload, user_actors: Sequence[int], limits: Limits, listeners: Listeners, *,
                 faults: FaultState | None = None, sample_every: float = 0.0, device_resource: int = -1) -> None:
        """`sample_every` > 0: sample the fragmentation every that many seconds (`fragment_samples`);
        `device_resource` ≥ 0: that resource is modelled as devices (`protocols.devices`), and
        allocations say which devices they took."""
        super().__init__(limits, listeners, faults)
        capacities = [s.capacity for s in workload.servers]
        demands = [u.demand for u in workload.users]
        self.labels = [u.id for u in workload.users]
        self.resources = workload.resources
        self.sample_every = sample_every
        self.fragment_samples: list[tuple[float, list[float]]] = []  # (time, fragmented share of each resource)
        self.first_blocked: tuple[float, int, list[float], list[float]] | None = None
        """When an allocation first left some placeable user's task fitting nowhere: (time, that
        user, the fragmented and the free share of each resource then)."""
        self.capacity = [tuple(c) for c in capacities]
        self.free = [list(c) for c in capacities]
        self.devices: list[Devices] | None = None
        if device_resource >= 0:
            self.devices = [Devices(device_resource, c[device_resource]) for c in self.capacity]
        self.demands = [tuple(d) for d in demands]
        self.total = total_capacity(self.capacity)
        self.task_share = [dominant_share(d, self.total) for d in self.demands]
        self.user_index = {actor: k for k, actor in enumerate(user_actors)}
        self.user_actors = list(user_actors)
        self.tasks = [0] * len(demands)
        self.shares = [0.0] * len(demands)
        # Vectorised views for the per-allocation checks; same tolerance rule as `fits`.
        self._demand_matrix = np.array(self.demands, dtype=float).reshape(len(demands), len(self.total))
        self._share_array = np.zeros(len(demands))
        self.fit_count = np.zeros(len(demands), dtype=np.int64)
        for block in self._server_blocks():
            self.fit_count += self._fitting_across(block).sum(axis=0)
        self.unplaceable = [k for k, n in enumerate(self.fit_count.tolist()) if n == 0]
        self.on_server: list[list[int]] = [[] for _ in self.capacity]  # users of the tasks running there
        self._fragments: np.ndarray | None = None  # servers × resources, as of the last `fragmentation()`
        self._changed: set[int] = set()  # servers whose free capacity changed since then
        skip = set(self.unplaceable)
        self._mix = self._demand_matrix[[k for k in range(len(demands)) if k not in skip]]  # the placeable users'
        self._capacity_array = np.asarray(self.capacity, dtype=float)
        self.blocked_on: int | None = None  # the user a blocking rule holds allocations back for
        self.blocked_pending: frozenset[int] = frozenset()  # the users whose tasks it held then

    def subscribe(self, runtime: Subscriber) -> None:
        """Hear the nodes' allocations and blocks, and the environment's crashes and recoveries."""
        runtime.subscribe(TaskAllocated, self.on_event)
        runtime.subscribe(AllocationBlocked, self.on_blocked)
        runtime.subscribe(ServerCrashed, self.on_crashed)
        runtime.subscribe(ServerRecovered, self.on_recovered)

    def on_blocked(self, event: AllocationBlocked) -> None:
        """The allocator holds every allocation back for `event.user`'s task (None: no longer)."""
        self.blocked_on = None if event.user is None else self.user_index[event.user]
        self.blocked_pending = frozenset(self.user_index[u] for u in event.pending)
        self._end_if_blocked()

    def _end_if_blocked(self) -> None:
        """End the run as blocked when the user allocations wait for fits nowhere and nothing can
        change that: no task ends, no fault is left to come, and every user whose task fits is
        among those the rule weighed (one whose task was lost or is on its way may come lower
        and be served: the run goes on, and a stall is still a stall)."""
        k = self.blocked_on
        if k is None or self.outcome is not None or self.fit_count[k] > 0 or not self.settled():
            return
        if any(j not in self.blocked_pending for j in np.flatnonzero(self.fit_count > 0).tolist()):
            return
        waiting = int((self.fit_count > 0).sum())
        self.finish(BLOCKED, self.because(f"the rule holds every allocation back for user {self.labels[k]}, whose "
                                          f"task fits on no server, and no task ends to free room ({waiting} "
                                          "user(s) could still place a task)"), self.last_allocation)

    # -- allocation events ----------------------------------------------------------------
    def on_event(self, event: TaskAllocated) -> None:
        """A node reported a task start (subscribed to the runtime's `TaskAllocated` events)."""
        self.on_allocation(event.time, event.server, event.user, event.task, event.demand, event.devices)

    def on_allocation(self, now: float, server: int, user: int, task: int, demand: Vector,
                      devices: tuple[int, ...] = EMPTY) -> None:
        k = self.user_index[user]
        free = self.free[server]
        capacity = self.capacity[server]
        if not fits(demand, free, capacity):
            raise CapacityViolation(
                f"capacity invariant broken at t={now:.6f}s: server {server} holds {tuple(free)} free "
                f"and was given task {task} of user {k} needing {demand}"
            )
        before = self.shares[k]
        error_flags = self._judge(k, before)
        fitted = self._fitting_on(server)
        if self.devices is not None:
            layout = self.devices[server]
            try:
                layout.take(demand[layout.resource], devices)
            except CapacityViolation as error:
                raise CapacityViolation(f"capacity invariant broken at t={now:.6f}s: server {server}, task {task} "
                                        f"of user {k}: {error}") from None
        take(free, demand)
        self._changed.add(server)
        self.tasks[k] += 1
        self.shares[k] = self.tasks[k] * self.task_share[k]
        self._share_array[k] = self.shares[k]
        self.allocations += 1
        self.last_allocation = now
        self.on_server[server].append(k)
        lost = fitted & ~self._fitting_on(server)
        self.fit_count -= lost  # a user that fitted here before has a positive count
        if self.first_blocked is None and lost.any():
            blocked = np.flatnonzero(lost & (self.fit_count == 0))
            if len(blocked):
                self.first_blocked = (now, int(blocked[0]), self.fragmentation()[0], self.free_shares())
        if self._log is not None:
            self._log(
                "allocation",
                time=now,
                user=k,
                server=server,
                task=task,
                share_before=before,
                share_after=self.shares[k],
                error=error_flags[0],
            )
        if not self.fit_count.any() and self.settled():
            self._saturate()

    def _saturate(self) -> None:
        where = "any server that is up" if self.down else "any server"
        self.finish(SATURATED, self.because(f"no user's next task fits on {where}"), self.last_allocation)

    def on_crashed(self, event: ServerCrashed) -> None:
        """A server crashed: its tasks are gone, its room unusable until it recovers."""
        server = event.actor
        if server >= len(self.capacity) or server in self.down:
            return  # a user, the gateway or the scheduler
        self.fit_count -= self._fitting_on(server)
        for k in self.on_server[server]:
            self.tasks[k] -= 1
            self.shares[k] = self.tasks[k] * self.task_share[k]
            self._share_array[k] = self.shares[k]
        self.on_server[server] = []
        self.free[server] = list(self.capacity[server])
        if self.devices is not None:
            self.devices[server].reset()
        self.down.add(server)
        self._changed.add(server)

    def on_recovered(self, event: ServerRecovered) -> None:
        server = event.actor
        if server in self.down:
            self.down.discard(server)
            self._changed.add(server)
            self.fit_count += self._fitting_on(server)

    def _judge(self, k: int, share: float) -> tuple[bool, ...]:
        others = self.fit_count > 0
        others[k] = False
        return self.flag_errors(share, float(self._share_array[others].min()) if others.any() else None)

    def _fitting(self, free: Sequence[Any], capacity: Sequence[Any]) -> np.ndarray:
        """Which users' tasks fit in `free` (the `fits` rule, for all users at once): one server's
        vectors give users, servers × resources give servers × users."""
        limit = np.asarray(free, dtype=float) + REL_TOL * np.asarray(capacity, dtype=float)
        return np.all(self._demand_matrix <= limit[..., None, :], axis=-1)

    def _fitting_on(self, server: int) -> np.ndarray:
        """Which users' tasks fit on `server` now (its devices too, in the device model)."""
        fitting = self._fitting(self.free[server], self.capacity[server])
        if self.devices is not None:
            fitting &= self._devices_usable([self.devices[server]])[0]
        return fitting

    def _fitting_across(self, servers: Sequence[int]) -> np.ndarray:
        """`_fitting_on` for a block of servers at once (`_server_blocks`): servers × users."""
        fitting = self._fitting([self.free[s] for s in servers], [self.capacity[s] for s in servers])
        if self.devices is not None:
            fitting &= self._devices_usable([self.devices[s] for s in servers])
        return fitting

    def _devices_usable(self, layouts: list[Devices]) -> np.ndarray:
        """Servers × users: can each user's devices be placed on these servers' devices?"""
        return device_usable(self._demand_matrix[:, layouts[0].resource], device_matrix(layouts))

    def _server_blocks(self, servers: Sequence[int] | None = None) -> list[Sequence[int]]:
        """`servers` (default: all, as ranges) in consecutive blocks small enough that a block's
        servers × users × resources comparisons take about `BLOCK_CELLS` booleans (at 100,000
        servers × 5,000 users, the whole cluster at once would take gigabytes, server by server
        200,000 NumPy calls)."""
        users, resources = self._demand_matrix.shape
        step = max(1, BLOCK_CELLS // max(1, users * resources))
        chosen: Sequence[int] = range(len(self.capacity)) if servers is None else servers
        return [chosen[start:start + step] for start in range(0, len(chosen), step)]

    # -- ticks ----------------------------------------------------------------------------
    def on_tick(self, now: float, tick: int) -> None:
        if self.outcome is not None or self.time_capped(now):
            return
        if self.sample_every > 0 and (not self.fragment_samples
                                      or now - self.fragment_samples[-1][0] >= self.sample_every - REL_TOL):
            self.fragment_samples.append((now, self.fragmentation()[0]))
        if not self.fit_count.any():
            if self.settled():  # saturated while a fault could still free room: now it cannot
                self._saturate()
            return
        self._end_if_blocked()
        if self.outcome is not None:
            return
        quiet = self.quiet_since()
        if quiet is not None and now - quiet >= self.stall_ticks * self.tick - REL_TOL:
            waiting = int((self.fit_count > 0).sum())
            self.finish(
                STALLED,
                self.because(f"no allocation for {self.stall_ticks} ticks while {waiting} user(s) could still "
                             "place a task"),
                now,
            )
        else:
            self.report_progress(now, tick)

    # -- results --------------------------------------------------------------------------
    def sections(self, end: RunEnd) -> list[Section]:
        """What this harness measured: how the run ended, its errors, the final allocation's fairness."""
        return [self.outcome_section(self.last_allocation, end.now), self.errors_section(), self.fairness()]

    def fairness(self) -> EndlessFairness:
        """Fairness of the final allocation (the thesis's metrics), over the placeable users."""
        shares = self.placeable_shares()
        unplaceable = set(self.unplaceable)
        fragmented, holders = self.fragmentation()
        samples = self.fragment_samples
        resources, labels = self.resources, self.labels
        return EndlessFairness(
            min_dominant_share=min(shares) if shares else 0.0,
            gini=gini(shares) if shares else 0.0,
            std_dominant_share=sample_std(shares) if shares else 0.0,
            ratio_20_20=finite_or_none(ratio_20_20(shares)) if shares else None,
            jain=jain(shares) if shares else 1.0,
            utilization=dict(zip(resources, self.utilization())),
            stranded=dict(zip(resources, self.stranded())),
            fragmented=dict(zip(resources, fragmented)),
            fragmented_servers=dict(zip(resources, holders)),
            fragmented_mean={name: sum(x[r] for _, x in samples) / len(samples) if samples else None
                             for r, name in enumerate(resources)},
            fragmented_series={"time_s": [t for t, _ in samples],
                               **{name: [x[r] for _, x in samples] for r, name in enumerate(resources)}},
            first_blocked=None if self.first_blocked is None else FirstBlocked(
                time_s=self.first_blocked[0], user=labels[self.first_blocked[1]],
                fragmented=dict(zip(resources, self.first_blocked[2])),
                free=dict(zip(resources, self.first_blocked[3]))),
            dominant_shares={labels[k]: s for k, s in enumerate(self.shares) if k not in unplaceable},
            tasks={labels[k]: n for k, n in enumerate(self.tasks) if k not in unplaceable},
            unplaceable_users=[labels[k] for k in sorted(unplaceable)])

    def lowest_wanting(self) -> int | None:
        """The actor of the user with the lowest share whose next task still fits somewhere."""
        wanting = np.flatnonzero(self.fit_count > 0)
        if not len(wanting):
            return None
        return self.user_actors[int(wanting[np.argmin(self._share_array[wanting])])]

    def min_share(self) -> float:
        """The lowest `G_i` of the placeable users now (the fault timeline samples it)."""
        shares = self.placeable_shares()
        return min(shares) if shares else 0.0

    def share_list(self) -> list[float]:
        """Every user's dominant share now, in workload order (the sampler reads it)."""
        return list(self.shares)

    def queue(self) -> tuple[int, int] | None:
        """Endless users have no queue (the sampler asks)."""
        return None

    def placeable_shares(self) -> list[float]:
        skip = set(self.unplaceable)
        return [s for k, s in enumerate(self.shares) if k not in skip]

    def free_shares(self) -> list[float]:
        """Per resource, the free fraction of the cluster's total (servers that are up)."""
        free = [sum(max(f[r], 0.0) for s, f in enumerate(self.free) if s not in self.down)
                for r in range(len(self.total))]
        return [x / t if t > 0 else 0.0 for x, t in zip(free, self.total)]

    def utilization(self) -> list[float]:
        used = [sum(c[r] - f[r] for c, f in zip(self.capacity, self.free)) for r in range(len(self.total))]
        return [u / t for u, t in zip(used, self.total)]

    def stranded(self) -> list[float]:
        """Per resource `r`, the fraction of the cluster's `r` left free on servers where some
        placeable user's demand for `r` would fit but its whole task does not: capacity that
        tasks wanting it still wait for, blocked by the other resources placed beside it (GPUs
        without the CPU to use them). Zero for a resource no user demands."""
        skip = set(self.unplaceable)
        wanting = [k for k in range(len(self.shares)) if k not in skip]
        demands = self._demand_matrix[wanting]  # placeable users × resources
        wanted = demands > 0
        stranded = [0.0] * len(self.total)
        for block in self._server_blocks():
            slack = (np.asarray([self.free[s] for s in block], dtype=float)
                     + REL_TOL * np.asarray([self.capacity[s] for s in block], dtype=float))
            blocked = wanted & (demands <= slack[:, None, :]) & ~self._fitting_across(block)[:, wanting, None]
            for i, r in zip(*(axis.tolist() for axis in np.nonzero(blocked.any(axis=1)))):  # by server, then resource
                free, capacity = self.free[block[i]], self.capacity[block[i]]
                if free[r] > REL_TOL * capacity[r]:
                    stranded[r] += free[r]
        return [s / t if t > 0 else 0.0 for s, t in zip(stranded, self.total)]

    def _fragmented(self, servers: Sequence[int]) -> np.ndarray:
        """`fragmented_matrix` of these servers now: servers × resources."""
        devices = None
        if self.devices is not None:
            devices = self.devices[0].resource, device_matrix([self.devices[s] for s in servers])
        return fragmented_matrix(np.asarray([self.free[s] for s in servers], dtype=float),
                                 self._capacity_array[list(servers)], self._mix, devices=devices)

    def fragmentation(self) -> tuple[list[float], list[int]]:
        """Per resource, the fraction of the cluster's total that is free but fragmented for the
        demand mix of the placeable users (`protocols.fragmentation`: no task of the mix can use
        it), and the number of servers holding such a fragment. At saturation every free amount
        is fragmented; `stranded` is the part of it some waiting task wants."""
        if self._fragments is None:
            changed = list(range(len(self.capacity)))
            self._fragments = np.zeros_like(self._capacity_array)
        else:
            changed = sorted(self._changed)
        self._changed.clear()
        if changed:  # only the servers an allocation, crash or recovery touched since the last call
            # The device model's weighted sum is a matrix product whose last bit depends on how many
            # rows it is given: there, all changed servers in one block, as they always were.
            blocks = [changed] if self.devices is not None else self._server_blocks(changed)
            rows = np.concatenate([self._fragmented(block) for block in blocks])
            rows[[i for i, s in enumerate(changed) if s in self.down]] = 0.0  # a crashed server holds nothing
            self._fragments[changed] = rows
        lost = self._fragments
        held = lost > REL_TOL * self._capacity_array
        totals = lost.sum(axis=0)
        return ([x / t if t > 0 else 0.0 for x, t in zip(totals.tolist(), self.total)],
                held.sum(axis=0).tolist())


def error_series(error_flags: bytearray, tolerances: Sequence[float],
                 points: int = 100) -> dict[str, list[float] | list[int]]:
    """Cumulative error ratio per tolerance, sampled at ≤ `points` + 1 allocation counts
    (`error_flags`: bit i of byte n says allocation n was an error at tolerance i)."""
    n = len(error_flags)
    if n == 0:
        return {"allocations": []}
    step = max(1, -(-n // points))
    marks = np.arange(step, n + 1, step)
    if marks[-1] != n:
        marks = np.append(marks, n)
    flags = np.frombuffer(bytes(error_flags), dtype=np.uint8)
    series: dict[str, list[float] | list[int]] = {"allocations": marks.tolist()}
    for i, tau in enumerate(tolerances):
        cumulative = np.cumsum((flags >> i) & 1)
        series[f"{tau:g}"] = (cumulative[marks - 1] / marks).tolist()
    return series
