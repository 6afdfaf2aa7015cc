"""A resource modelled as whole devices (`--devices gpu`, issue 38): GPUs as they are.

Scalar model (the default): a server with 8 GPUs holding fractional tasks has `8 − Σ fractions`
free, and a task fits when its demand fits in that sum. Device model: each unit of the
resource is one device. A demand below one unit must fit on **one** device (a fraction never
spans two); a demand of one unit or more takes that many **whole, unused** devices (a demand
above one must be a whole number: `check_device_workload`). The scalar free amount stays the
sum over the devices, so shares, utilisation and DRFH's heuristic read it as before; the
devices only make fewer tasks fit.

Which device (decision): a fraction goes to the device with the least free room that holds it
(ties to the lower index), so partly used devices fill up before a whole one is broken; whole
devices are taken lowest index first. Every placement uses this rule inside a server; the
placements differ only in the server they choose. The device a task holds is part of its
reservation and travels with it (`Launch`, `TaskAllocated`), so the scheduler's view, the
resource node and the harness always agree on which device holds what.

Fragmentation (`protocols.fragmentation`) counts, for a task that fits, the free room on the
devices it cannot use: those with less free than its fraction, or, for a whole-device task,
every partly used device (Weng et al., USENIX ATC 2023).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from drfemu.kernel.errors import InputError
from drfemu.kernel.resources import REL_TOL, CapacityViolation

__all__ = ["EMPTY", "DeviceError", "Devices", "check_device_workload", "device_matrix", "device_need", "device_usable"]

EMPTY: tuple[int, ...] = ()


class DeviceError(InputError):
    """A run the device model cannot represent: an unknown resource, fractional device counts."""


def _whole(x: float) -> bool:
    return abs(x - round(x)) <= REL_TOL * max(1.0, abs(x))


def check_device_workload(resource: str, capacities: Sequence[Sequence[float]], demands: Sequence[Sequence[float]],
                          names: Sequence[str]) -> int:
    """The index of `resource` among `names`, after checking that every server holds a whole
    number of its devices and every demand of it is below one device or a whole number of them."""
    if resource not in names:
        raise DeviceError(f"--devices {resource}: the workload has no resource {resource!r} (it has "
                          f"{', '.join(names)})")
    r = list(names).index(resource)
    for s, capacity in enumerate(capacities):
        if capacity[r] < 0 or not _whole(capacity[r]):
            raise DeviceError(f"--devices {resource}: server {s} holds {capacity[r]:g} {resource}, not a whole "
                              "number of devices")
    for u, demand in enumerate(demands):
        if demand[r] > 1 + REL_TOL and not _whole(demand[r]):
            raise DeviceError(f"--devices {resource}: user {u} asks for {demand[r]:g} {resource}: above one device a "
                              "demand must be a whole number of devices")
    return r


class Devices:
    """The devices of resource `resource` on one server: the free room of each (1 when unused)."""

    __slots__ = ("free", "resource")

    def __init__(self, resource: int, count: float) -> None:
        self.resource = resource
        self.free = [1.0] * round(count)

    def fits(self, amount: float) -> bool:
        """Can a task needing `amount` of the resource be placed on these devices?"""
        if amount <= 0.0:
            return True
        if amount < 1.0:
            return any(f >= amount - REL_TOL for f in self.free)
        return sum(1 for f in self.free if f >= 1.0 - REL_TOL) >= round(amount)

    def choose(self, amount: float) -> tuple[int, ...]:
        """The devices a task needing `amount` would take (the module's rule); () when it needs
        none. Raises `CapacityViolation` when it does not fit."""
        if amount <= 0.0:
            return EMPTY
        if amount < 1.0:
            best, room = -1, math.inf
            for d, f in enumerate(self.free):
                if amount - REL_TOL <= f < room - REL_TOL:
                    best, room = d, f
            if best >= 0:
                return (best,)
        else:
            whole = [d for d, f in enumerate(self.free) if f >= 1.0 - REL_TOL][:round(amount)]
            if len(whole) == round(amount):
                return tuple(whole)
        raise CapacityViolation(f"no devices hold {amount:g} (free per device: {self.free})")

    def take(self, amount: float, chosen: Sequence[int]) -> None:
        """Take `amount` from the devices `chosen` (one for a fraction, whole devices otherwise);
        raises `CapacityViolation` when they cannot hold it."""
        if amount <= 0.0:
            if chosen:
                raise CapacityViolation(f"a task needing no device was given devices {tuple(chosen)}")
            return
        each = min(1.0, amount)
        need = 1 if amount < 1.0 else round(amount)
        if len(chosen) != need or len(set(chosen)) != need or any(not 0 <= d < len(self.free) for d in chosen):
            raise CapacityViolation(f"{amount:g} needs {need} device(s) of {len(self.free)}, was given {tuple(chosen)}")
        if any(self.free[d] < each - REL_TOL for d in chosen):
            raise CapacityViolation(f"devices {tuple(chosen)} cannot hold {amount:g} (free per device: {self.free})")
        for d in chosen:
            self.free[d] -= each

    def give(self, amount: float, chosen: Sequence[int]) -> None:
        """Give back what `take(amount, chosen)` took."""
        each = min(1.0, amount)
        for d in chosen:
            room = self.free[d] + each
            self.free[d] = 1.0 if room >= 1.0 - REL_TOL else room

    def placed(self, amount: float) -> Devices:
        """These devices as they would be once a task needing `amount` took its devices (a copy;
        these are not changed)."""
        after = self.copy()
        after.take(amount, self.choose(amount))
        return after

    def copy(self) -> Devices:
        """The same devices, to change without changing these."""
        twin = Devices(self.resource, 0)
        twin.free = list(self.free)
        return twin

    def reset(self) -> None:
        """Every device unused (a server that runs nothing, or rejoined after a crash)."""
        self.free = [1.0] * len(self.free)


def device_need(amounts: np.ndarray) -> np.ndarray:
    """Per demand, the free room a device must have to be usable by it: the fraction, or a whole
    device for demands of one or more (`inf` for a demand of none: no device is usable by it)."""
    return np.where(amounts <= 0.0, np.inf, np.minimum(amounts, 1.0))


def device_matrix(layouts: Sequence[Devices | None]) -> np.ndarray:
    """Servers × devices free room, padded with 0 (a missing device has no room: it fits nothing
    and fragments nothing)."""
    width = max((len(d.free) for d in layouts if d is not None), default=0)
    out = np.zeros((len(layouts), width), dtype=float)
    for s, d in enumerate(layouts):
        if d is not None:
            out[s, :len(d.free)] = d.free
    return out


def device_usable(amounts: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Servers × demands: can each demand's `amounts` of the device resource be placed on each
    server's `devices` (servers × devices free room)?"""
    need = device_need(amounts)  # demands
    room = devices[:, None, :] >= (need[None, :, None] - REL_TOL)  # servers × demands × devices
    count = room.sum(axis=2)
    wanted = np.where(amounts >= 1.0, np.round(amounts), 1.0)
    usable: np.ndarray = (amounts[None, :] <= 0.0) | (count >= wanted[None, :])
    return usable
