"""DRF by progressive filling on one pool (Ghodsi et al. 2011; thesis §2.4; SPEC §6).

`drf_tasks`: discrete tasks. Repeatedly the user with the lowest dominant share (ties to the
lower index) whose next task still fits gets one; users whose task no longer fits are
skipped, so the result is saturated (no user's next task fits). Decision: the DRF paper's
Algorithm 1 stops at the first user whose task does not fit; skipping it instead keeps the
allocation Pareto-efficient and gives the same result in the paper's examples (tested).

`drf_divisible`: tasks are divisible. All unfrozen users' dominant shares rise at one rate
until a resource is exhausted; the users that demand it freeze; repeat (water-filling).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from drfemu.kernel.resources import REL_TOL
from drfemu.policies.pool import PolicyInputError, check_pool

__all__ = ["Allocation", "drf_divisible", "drf_tasks"]


@dataclass(frozen=True)
class Allocation:
    """Per user: tasks (whole or fractional), resources held, and dominant share."""

    capacity: tuple[float, ...]
    tasks: tuple[float, ...]
    allocation: tuple[tuple[float, ...], ...]
    dominant_shares: tuple[float, ...]

    @property
    def min_dominant_share(self) -> float:
        return min(self.dominant_shares)


def _allocation(capacity: tuple[float, ...], demands: list[tuple[float, ...]], tasks: Sequence[float]) -> Allocation:
    held = tuple(tuple(n * d for d in demand) for n, demand in zip(tasks, demands))
    shares = tuple(max(h / c for h, c in zip(row, capacity)) for row in held)
    return Allocation(capacity, tuple(tasks), held, shares)


MAX_TASKS = 1_000_000


def drf_tasks(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> Allocation:
    """Discrete DRF progressive filling; `tasks` are whole numbers.

    Bound: it places one task per step, so a pool that would hold more than `MAX_TASKS` tasks
    in all is refused (`PolicyInputError`) rather than filled for hours; `drf_divisible`
    answers such pools in a few steps."""
    cap, users = check_pool(capacity, demands)
    most = sum(min(c / d for d, c in zip(demand, cap) if d > 0) for demand in users)
    if most > MAX_TASKS:
        raise PolicyInputError(f"the pool holds up to {most:.3g} whole tasks, more than the {MAX_TASKS:,} drf fills "
                               "one by one; use --divisible")
    per_task = [max(d / c for d, c in zip(demand, cap)) for demand in users]
    used = [0.0] * len(cap)
    tasks = [0] * len(users)
    active = set(range(len(users)))
    while active:
        user = min(active, key=lambda i: (tasks[i] * per_task[i], i))
        demand = users[user]
        if all(u + d <= c + REL_TOL * c for u, d, c in zip(used, demand, cap)):
            tasks[user] += 1
            used = [u + d for u, d in zip(used, demand)]
        else:
            active.discard(user)
    return _allocation(cap, users, tasks)


def drf_divisible(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> Allocation:
    """Divisible DRF (water-filling on dominant shares); `tasks` may be fractional."""
    cap, users = check_pool(capacity, demands)
    per_task = [max(d / c for d, c in zip(demand, cap)) for demand in users]
    # Resource use per unit of dominant share, per user: d_ir / s_i.
    rate = [[d / s for d in demand] for demand, s in zip(users, per_task)]
    share = [0.0] * len(users)
    used = [0.0] * len(cap)
    active = set(range(len(users)))
    while active:
        growth = [sum(rate[i][r] for i in active) for r in range(len(cap))]
        steps = [(cap[r] - used[r]) / growth[r] for r in range(len(cap)) if growth[r] > 0]
        step = max(0.0, min(steps))
        for i in active:
            share[i] += step
        used = [sum(rate[i][r] * share[i] for i in range(len(users))) for r in range(len(cap))]
        full = {r for r in range(len(cap)) if growth[r] > 0 and used[r] >= cap[r] * (1 - REL_TOL)}
        active -= {i for i in active if any(users[i][r] > 0 for r in full)}
    return _allocation(cap, users, [s / p for s, p in zip(share, per_task)])
