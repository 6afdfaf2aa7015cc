"""A central allocator's view of the servers' free capacity, and server selection.

Placement heuristics (thesis §4.1, DRFH §2.1.4):
- **first-fit**: the first server, in the fixed order of the workload, where the task fits;
- **best-fit**: the fitting server minimising `H(i,l) = ‖D_i/D_ir0 − c̄_l/c̄_lr0‖₁` over free
  capacity `c̄_l`, ties to the lower server index. Ties are ties (`improves`): a server beats
  the best so far only by more than `REL_TOL` (relative to the larger value, absolute below 1),
  so the rounding of a resource's units cannot reorder servers whose heuristics are equal on
  paper (issue 38: with exact comparison, cpu × 1,000 changed 3,029 of 3,997 placements of
  `drf-bestfit` on `configs/workloads/gpu-50x20.json` — one flipped near-tie, and every
  later placement followed it). As DRFH defines it, demands and capacities
  are first normalised by the cluster's total of each resource, so the heuristic compares
  *shares* and does not depend on units: a GPU mismatch (values near 1) weighs as much as a
  memory mismatch (values near 50). (Before issue 14 it was computed on raw units.)
  Decision: the thesis divides by the first resource; we divide by the first resource the
  task actually demands (`r0`), which is the first one for every Google task and keeps the
  heuristic defined for demands with a zero first entry (e.g. a GPU-only task).

First-fit keeps, per key (a user), the index where its last search stopped: capacity only
shrinks between `release` calls, so servers skipped once stay unfit and are never rescanned.
Any `release` clears those hints.

In the device model (`protocols.devices`, `device_resource` ≥ 0) a task fits a server only
where its devices do, and `reserve` returns the devices it took, which `release` gives back.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from drfemu.kernel.resources import REL_TOL, Vector, fits, give, improves, take
from drfemu.protocols.devices import EMPTY, Devices
from drfemu.protocols.fragmentation import least_fragmentation

__all__ = ["ClusterView", "best_fit", "drfh_heuristic"]


def drfh_heuristic(demand: Sequence[float], free: Sequence[float], scale: Sequence[float]) -> float:
    """DRFH's `H(i,l)` of placing `demand` where `free` is left, both normalised by `scale`
    (1 / the cluster total of each resource); `inf` when the server has none of `r0` left."""
    r0 = next((r for r, d in enumerate(demand) if d > 0), None)
    if r0 is None:
        return 0.0
    ref_demand, ref_free = demand[r0] * scale[r0], free[r0] * scale[r0]
    if ref_free <= 0.0:
        return float("inf")
    return sum(abs(d * k / ref_demand - f * k / ref_free) for d, f, k in zip(demand, free, scale))


def best_fit(demand: Sequence[float], free: Sequence[Sequence[float]], capacity: Sequence[Vector],
             scale: Sequence[float], devices: Sequence[Devices] | None = None) -> int:
    """Index of the server (among `free`/`capacity`) where `demand` fits with the lowest
    `drfh_heuristic` (`improves`: ties within rounding go to the lower index); -1 if it fits
    nowhere. A server with (almost) none of `r0` left is skipped. `devices`: each server's, in
    the device model."""
    r0 = next((r for r, d in enumerate(demand) if d > 0), None)
    best, best_h = -1, float("inf")
    for server, (left, cap) in enumerate(zip(free, capacity)):
        if not fits(demand, left, cap):
            continue
        if devices is not None and not devices[server].fits(demand[devices[server].resource]):
            continue
        if r0 is None:
            return server
        if left[r0] <= REL_TOL * cap[r0]:
            continue
        h = drfh_heuristic(demand, left, scale)
        if improves(h, best_h):
            best, best_h = server, h
    return best


class ClusterView:
    """Free capacity of every server, as one allocator sees it."""

    __slots__ = ("capacity", "devices", "free", "scale", "_hint")

    def __init__(self, capacities: Sequence[Sequence[float]], device_resource: int = -1) -> None:
        """`device_resource` ≥ 0: that resource is modelled as devices (`protocols.devices`)."""
        self.capacity: list[Vector] = [tuple(map(float, c)) for c in capacities]
        self.free: list[list[float]] = [list(c) for c in self.capacity]
        totals = [sum(column) for column in zip(*self.capacity)]
        self.scale: Vector = tuple(1.0 / t if t > 0 else 0.0 for t in totals)  # DRFH's normalisation
        self._hint: dict[Hashable, int] = {}
        self.devices: list[Devices] | None = None
        if device_resource >= 0:
            self.devices = [Devices(device_resource, c[device_resource]) for c in self.capacity]

    def __len__(self) -> int:
        return len(self.capacity)

    def fits_on(self, server: int, demand: Sequence[float]) -> bool:
        return fits(demand, self.free[server], self.capacity[server]) and self._devices_fit(server, demand)

    def _devices_fit(self, server: int, demand: Sequence[float]) -> bool:
        if self.devices is None:
            return True
        devices = self.devices[server]
        return devices.fits(demand[devices.resource])

    def first_fit(self, demand: Sequence[float], key: Hashable | None = None) -> int:
        """Index of the first server where `demand` fits, or -1."""
        start = self._hint.get(key, 0) if key is not None else 0
        free, capacity = self.free, self.capacity
        for server in range(start, len(free)):
            if fits(demand, free[server], capacity[server]) and self._devices_fit(server, demand):
                if key is not None:
                    self._hint[key] = server
                return server
        if key is not None:
            self._hint[key] = len(free)
        return -1

    def best_fit(self, demand: Sequence[float]) -> int:
        """Index of the fitting server with the lowest DRFH heuristic H(i,l), or -1."""
        return best_fit(demand, self.free, self.capacity, self.scale, self.devices)

    def least_fragmentation(self, demand: Sequence[float], mix: Sequence[Vector]) -> int:
        """Index of the fitting server where `demand` adds the least fragmentation for `mix`, or -1."""
        return least_fragmentation(demand, self.free, self.capacity, mix, self.scale, self.devices)

    def reserve(self, server: int, demand: Sequence[float], chosen: tuple[int, ...] | None = None) -> tuple[int, ...]:
        """Take `demand` from `server` (the caller has checked that it fits); returns the devices
        it took (`chosen`, a restarted scheduler's report of them, or the device rule's choice;
        () without the device model)."""
        take(self.free[server], demand)
        if self.devices is None:
            return EMPTY
        devices = self.devices[server]
        amount = demand[devices.resource]
        if chosen is None:
            chosen = devices.choose(amount)
        devices.take(amount, chosen)
        return chosen

    def set_down(self, server: int) -> None:
        """`server` crashed: nothing fits on it until `set_up`."""
        self.free[server] = [float("-inf")] * len(self.capacity[server])
        if self.devices is not None:
            self.devices[server].free = [0.0] * len(self.devices[server].free)

    def set_up(self, server: int) -> None:
        """`server` rejoined, empty; forgets first-fit hints."""
        self.free[server] = list(self.capacity[server])
        if self.devices is not None:
            self.devices[server].reset()
        self._hint.clear()

    def release(self, server: int, demand: Sequence[float], chosen: tuple[int, ...] = EMPTY) -> None:
        """Give `demand`, held on devices `chosen`, back to `server`; forgets first-fit hints."""
        give(self.free[server], demand)
        if self.devices is not None:
            self.devices[server].give(demand[self.devices[server].resource], chosen)
        self._hint.clear()
