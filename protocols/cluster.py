"""A central allocator's view of the servers' free capacity, and server selection.

Placement heuristics (thesis §4.1, DRFH §2.1.4):
- **first-fit**: the first server, in the fixed order of the workload, where the task fits;
- **best-fit**: the fitting server minimising `H(i,l) = ‖D_i/D_ir0 − c̄_l/c̄_lr0‖₁` over free
  capacity `c̄_l`, ties to the lower server index. Decision: the thesis normalises by the
  first resource; we normalise by the first resource the task actually demands (`r0`), which
  is the first one for every Google task and keeps the heuristic defined for demands with a
  zero first entry (e.g. a GPU-only task).

First-fit keeps, per key (a user), the index where its last search stopped: capacity only
shrinks between `release` calls, so servers skipped once stay unfit and are never rescanned.
Any `release` clears those hints.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from protocols.resources import REL_TOL, Vector, fits, give, take

__all__ = ["ClusterView"]


class ClusterView:
    """Free capacity of every server, as one allocator sees it."""

    __slots__ = ("capacity", "free", "_hint")

    def __init__(self, capacities: Sequence[Sequence[float]]) -> None:
        self.capacity: list[Vector] = [tuple(map(float, c)) for c in capacities]
        self.free: list[list[float]] = [list(c) for c in self.capacity]
        self._hint: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self.capacity)

    def fits_on(self, server: int, demand: Sequence[float]) -> bool:
        return fits(demand, self.free[server], self.capacity[server])

    def first_fit(self, demand: Sequence[float], key: Hashable | None = None) -> int:
        """Index of the first server where `demand` fits, or -1."""
        start = self._hint.get(key, 0) if key is not None else 0
        free, capacity = self.free, self.capacity
        for server in range(start, len(free)):
            if fits(demand, free[server], capacity[server]):
                if key is not None:
                    self._hint[key] = server
                return server
        if key is not None:
            self._hint[key] = len(free)
        return -1

    def best_fit(self, demand: Sequence[float]) -> int:
        """Index of the fitting server with the lowest DRFH heuristic H(i,l), or -1."""
        r0 = next((r for r, d in enumerate(demand) if d > 0), None)
        if r0 is None:
            return 0 if self.free else -1
        profile = [d / demand[r0] for d in demand]
        best, best_h = -1, float("inf")
        for server, (free, capacity) in enumerate(zip(self.free, self.capacity)):
            if not fits(demand, free, capacity):
                continue
            ref = free[r0]
            if ref <= REL_TOL * capacity[r0]:
                continue
            h = sum(abs(p - f / ref) for p, f in zip(profile, free))
            if h < best_h:
                best, best_h = server, h
        return best

    def reserve(self, server: int, demand: Sequence[float]) -> None:
        """Take `demand` from `server` (the caller has checked that it fits)."""
        take(self.free[server], demand)

    def release(self, server: int, demand: Sequence[float]) -> None:
        """Give `demand` back to `server`; forgets first-fit hints."""
        give(self.free[server], demand)
        self._hint.clear()
