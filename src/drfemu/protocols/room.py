"""Keep room: place a task where it costs the task classes a server knows the least room (issue 60).

**Why.** Under DRF a user whose task is a whole GPU server is served only when its share is
the lowest, and one task raises it by a third of what it ends with; meanwhile every other
user's small tasks keep arriving. DRFH's best-fit heuristic puts a small task on the server
whose free shape matches the task's — often an empty 8-GPU server — so by the time the big
user is the lowest again no whole server is left, and with endless tasks none ever frees.
On 120 draws of the GPU-sharing trace (`docs/results.md`, issue 60) that left the poorest
user of 1 draw in 10 one or two tasks short of central DRF's, a whole-server user down to a
third of its share.

**Measure.** For a task class `d` (a demand of the mix the server knows, `DemandMix`) and a
server with free capacity `f`, `slots(d, f)` is how many tasks of `d` fit in `f` at once: for
each resource `r` with `d_r > 0`, ⌊f_r / d_r⌋; with GPUs as devices (`protocols.devices`), a
fraction `a < 1` fits ⌊room_k / a⌋ times on device `k`, summed over devices, and a task of `n`
whole devices ⌊(unused devices) / n⌋ times; the least of these. Placing a task costs the
mix `lost = Σ_d s_d · (slots(d, f) − slots(d, f − task))`, each class weighted by its
dominant share `s_d` — the share of the cluster the classes could still have placed on this
server and no longer can. A task that breaks a whole server costs the whole-server class its
share; a task on a server where it blocks nothing costs its own class one slot.

**Placement** (`--placement keep-room`): the fitting server with the least `lost`, counted in
tasks of the smallest class of the mix (`lost / min_d s_d`), plus DRFH's heuristic squashed
into [0, 1) (`h / (1 + h)`). Decision: the squashed heuristic orders servers whose losses are
within one smallest task of each other — where nothing big is at stake the task still goes
where its shape fits, as best-fit's would — and never outweighs a loss of a whole smallest
task. Measured on the trace against a plain sum and against a strict order (`docs/results.md`).

Worked example (`tests/test_room.py`): resources (cpu, gpu), cluster totals (100, 10); a
server with free (16, 8) and 8 whole GPUs as devices; the mix {(12, 8), (2, 0.5)}. The
whole-server class fits once (`s` = 0.8), the small class 8 times on CPU and 16 times on the
devices, so 8 (`s` = 0.05). Placing (2, 0.5) leaves (14, 7.5) with one device half used: the
big class fits 0 times (one device is no longer unused), the small class 7: lost = 0.8 + 0.05
= 0.85, 17 smallest tasks. On an empty server with free (32, 0) a CPU-only task (2, 0) loses
only its own slot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drfemu.kernel.resources import REL_TOL, Vector, fits, improves
from drfemu.protocols.cluster import drfh_heuristic
from drfemu.protocols.devices import Devices
from drfemu.protocols.fragmentation import class_shares

__all__ = ["keep_room", "room_lost", "room_score", "task_slots"]


def task_slots(mix: np.ndarray, free: Sequence[float], capacity: Sequence[float],
               devices: Devices | None = None) -> np.ndarray:
    """How many tasks of each class of `mix` fit at once in `free` (and on `devices`): per
    class, the least over the resources it asks for (a class that asks for nothing: 0)."""
    rooms = None if devices is None else np.asarray([devices.free], dtype=float)
    slots: np.ndarray = _slots(mix, np.asarray([free], dtype=float), capacity, devices, rooms)[0]
    return slots


def _slots(mix: np.ndarray, frees: np.ndarray, capacity: Sequence[float], devices: Devices | None,
           rooms: np.ndarray | None) -> np.ndarray:
    """`task_slots` for several states of one server at once: `frees` is states × resources,
    `rooms` states × devices (the device model); the result is states × classes."""
    f = np.maximum(frees, 0.0) + REL_TOL * np.asarray(capacity, dtype=float)
    asks = mix > 0.0
    if devices is not None:
        asks[:, devices.resource] = False
    per_resource = np.divide(f[:, None, :], mix[None, :, :], out=np.full((len(f), *mix.shape), np.inf),
                             where=asks[None, :, :])
    slots = np.floor(per_resource).min(axis=2) if mix.shape[1] else np.full((len(f), len(mix)), np.inf)
    if devices is not None and rooms is not None:
        amounts = mix[:, devices.resource]
        unused = np.count_nonzero(rooms >= 1.0 - REL_TOL, axis=1).astype(float)  # states
        fraction = np.where((amounts > 0.0) & (amounts < 1.0), amounts, 1.0)
        fractions = np.floor((rooms[:, None, :] + REL_TOL) / fraction[None, :, None]).sum(axis=2)
        whole = np.floor(unused[:, None] / np.maximum(np.round(amounts), 1.0)[None, :])
        on_devices = np.where(amounts <= 0.0, np.inf, np.where(amounts < 1.0, fractions, whole))
        slots = np.minimum(slots, on_devices)
    result: np.ndarray = np.where(np.isinf(slots), 0.0, slots)
    return result


def room_lost(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float], mix: np.ndarray,
              shares: np.ndarray, devices: Devices | None = None) -> float:
    """`Σ_d s_d · (slots before − slots after)`: the share of the cluster the classes of `mix`
    (dominant shares `shares`) could place on this server and could not once `demand` is
    placed there. The task must fit."""
    if not len(mix):
        return 0.0
    frees = np.asarray([free, [f - d for f, d in zip(free, demand)]], dtype=float)
    rooms = None
    if devices is not None:
        rooms = np.asarray([devices.free, devices.placed(demand[devices.resource]).free], dtype=float)
    before, after_slots = _slots(mix, frees, capacity, devices, rooms)
    return float((before - after_slots) @ shares)


def room_score(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float], mix: np.ndarray,
               shares: np.ndarray, scale: Sequence[float], devices: Devices | None = None) -> float:
    """The keep-room placement's score of a fitting server (lower is better): `room_lost` in
    tasks of the mix's smallest class, plus DRFH's heuristic squashed into [0, 1)."""
    h = drfh_heuristic(demand, free, scale)
    squashed = 1.0 if h == float("inf") else h / (1.0 + h)
    positive = shares[shares > 0.0]
    if not len(positive):
        return squashed
    return room_lost(demand, free, capacity, mix, shares, devices) / float(positive.min()) + squashed


def keep_room(demand: Sequence[float], free: Sequence[Sequence[float]], capacity: Sequence[Vector],
              mix: Sequence[Vector], scale: Sequence[float], devices: Sequence[Devices] | None = None) -> int:
    """Index of the fitting server with the lowest `room_score` for `mix` (ties within rounding
    to the lower index); -1 if `demand` fits nowhere. `devices`: each server's, in the device model."""
    m = np.asarray(mix, dtype=float).reshape(len(mix), len(demand))
    shares = class_shares(m, np.asarray(scale, dtype=float))
    best, best_score = -1, float("inf")
    for server, (left, cap) in enumerate(zip(free, capacity)):
        if not fits(demand, left, cap):
            continue
        layout = devices[server] if devices is not None else None
        if layout is not None and not layout.fits(demand[layout.resource]):
            continue
        score = room_score(demand, left, cap, m, shares, scale, layout)
        if best < 0 or improves(score, best_score):
            best, best_score = server, score
    return best
