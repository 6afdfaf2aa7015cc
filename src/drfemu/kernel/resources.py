"""Resource vectors, fit, dominant shares (thesis §3.1, eq. 3.3/3.7).

Vectors are tuples of floats, one entry per resource type, for any number of resources.
Tuples beat numpy arrays at the sizes used here (2–4 entries) by an order of magnitude.

Fit uses a relative tolerance: a demand fits when `d_r <= free_r + REL_TOL · capacity_r` for
every resource `r`. Decision: `REL_TOL = 1e-9`, far above the rounding error that thousands of
float subtractions accumulate and far below any real task size; capacity checks everywhere
(schedulers, resource nodes, the harness's invariant) use this same rule.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "REL_TOL",
    "CapacityViolation",
    "Vector",
    "add",
    "dominant_share",
    "fits",
    "give",
    "improves",
    "subtract",
    "take",
    "total_capacity",
]

REL_TOL = 1e-9
INF = float("inf")

Vector = tuple[float, ...]


class CapacityViolation(RuntimeError):
    """A server was asked to hold more than its capacity: a protocol bug; the run aborts."""


def improves(value: float, best: float) -> bool:
    """Is `value` lower than `best` by more than rounding (`REL_TOL` of the larger magnitude,
    at least 1)? Placement heuristics compare with it so that ties stay ties whatever the units (issue 38)."""
    if best == INF:
        return value < INF
    return best - value > REL_TOL * max(1.0, abs(value), abs(best))


def fits(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float]) -> bool:
    """True when `demand` fits in `free` on a server of `capacity` (relative tolerance)."""
    for d, f, c in zip(demand, free, capacity):
        if d > f + REL_TOL * c:
            return False
    return True


def dominant_share(demand: Sequence[float], total: Sequence[float]) -> float:
    """s_i = max_r D_ir / C_r: the share of the cluster one task of this demand takes."""
    return max(d / c for d, c in zip(demand, total))


def take(free: list[float], demand: Sequence[float]) -> None:
    """Subtract `demand` from the mutable free-capacity vector `free`, in place."""
    for r, d in enumerate(demand):
        free[r] -= d


def give(free: list[float], demand: Sequence[float]) -> None:
    """Add `demand` back to the mutable free-capacity vector `free`, in place."""
    for r, d in enumerate(demand):
        free[r] += d


def add(a: Sequence[float], b: Sequence[float]) -> Vector:
    return tuple(x + y for x, y in zip(a, b))


def subtract(a: Sequence[float], b: Sequence[float]) -> Vector:
    return tuple(x - y for x, y in zip(a, b))


def total_capacity(capacities: Sequence[Sequence[float]]) -> Vector:
    """C_r = Σ_l c_lr (eq. 3.1)."""
    if not capacities:
        raise ValueError("a cluster needs at least one server")
    return tuple(sum(column) for column in zip(*capacities))
