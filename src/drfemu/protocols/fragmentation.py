"""Fragmentation of free capacity for a demand mix, and the placement that adds least of it
(issue 38; after the fragmentation measure and gradient-descent placement of GPU-sharing
schedulers, Weng et al., USENIX ATC 2023, generalised here from GPUs to every resource).

**Measure.** A *demand mix* is a list of task demands, each equally likely (decision: one entry
per user the measurer knows, with its latest demand — endless users ask for tasks of one
demand for ever, so a user is a task class). For a server with `free` capacity, the free
amount of resource `r` is *fragmented for a task* when that task cannot use it: the task does
not fit on the server at all, or it demands none of `r`. The server's fragmentation of `r` is
the expected fragmented amount over the mix; a cluster's is the sum over servers.

Worked example (`tests/test_fragmentation.py`): resources (cpu, gpu); a server with free
(4, 0.5); the mix {(1, 1), (1, 0.25), (2, 0)}. Task (1, 1) does not fit: 4 cpu and 0.5 gpu are
fragmented for it. Task (1, 0.25) fits and uses both: nothing. Task (2, 0) fits but uses no
gpu: 0.5 gpu. So the server's fragmentation is cpu 4/3 ≈ 1.333, gpu (0.5 + 0.5)/3 ≈ 0.333.
At saturation no task of the mix fits anywhere, so all free capacity is fragmented; before,
the measure says how much of what is free the waiting tasks could not use. `stranded`
(the harness) counts less: only capacity some task wants and cannot get.

With GPUs as devices (`protocols.devices`), a task fits only where its devices do, and of the
device resource a fitting task loses the room of the devices it cannot use (less free than its
fraction; for a whole-device task, every partly used device), as Weng et al. define it.

**Placement** (`--placement min-fragmentation`): put a task where it *adds* the least
fragmentation, `Δ = F(free − demand) − F(free)`, where `F` sums a server's fragmentation of
each resource normalised by the cluster's total of it (the same normalisation DRFH's
heuristic uses, so no resource's units matter). Ties within rounding (`resources.improves`) go
to the lower index (centrally) or to the server the walk saw first.

Decision, measured: in the placement's `F` a task class weighs as the square of its dominant
share (`size_weights`), where the metric counts every class once. A class that fragmentation
blocks loses a task of its share, and the larger its tasks the likelier a remnant blocks it:
under DRF the poorest users of a GPU cluster are the 2- and 4-GPU ones, and with equal weights
the one 4-GPU user of 40 counted 1/40. Minimum share over central first-fit DRF's with this placement
(equal / linear / square weights): GPU cluster 100 × 40 seeds 1–5 0.66–0.95 / 0.89–1.00 /
0.996–1.001; GPU cluster 200 × 80 seeds 1–3 0.83–0.88 / 0.87–1.00 / 1.00; the synthetic GPU case
50 × 20 seeds 1–3 1.08–1.14 under every weighting; Google 100 × 20 seeds 1–3 1.01–1.04 /
1.02–1.06 / 1.01–1.04. DRFH best-fit on the same: 0.58–0.71 (200 × 80), 1.03–1.07, 1.00–1.07.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from drfemu.kernel.resources import REL_TOL, Vector, fits, improves
from drfemu.protocols.devices import Devices, device_matrix, device_need, device_usable

__all__ = ["DemandMix", "DeviceRows", "class_shares", "fragmentation_delta", "fragmented", "fragmented_matrix",
           "least_fragmentation", "size_weights"]

DeviceRows = tuple[int, np.ndarray]
"""The device model's part of a fragmentation query (`protocols.devices`): the device resource's
index and each server's free room per device (servers × devices)."""


def fragmented(free: Sequence[float], capacity: Sequence[float], mix: Sequence[Vector]) -> list[float]:
    """Per resource, the expected free amount on one server that a task drawn from `mix` cannot
    use (0 for an empty mix). Negative free (a crashed server's marker) counts as none."""
    row = fragmented_matrix(np.asarray([free], dtype=float), np.asarray([capacity], dtype=float),
                            np.asarray(mix, dtype=float))[0]
    return [float(x) for x in row]


def class_shares(mix: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each task class's dominant share (`mix` is classes × resources, `scale` 1 / the cluster
    total of each resource)."""
    shares: np.ndarray = (mix * scale).max(axis=1) if len(mix) else np.zeros(0)
    return shares


def size_weights(mix: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The placement's weight of each task class: the square of its dominant share (`mix` is
    tasks × resources, `scale` 1 / the cluster total of each resource), summing to 1."""
    weights = class_shares(mix, scale) ** 2
    total = weights.sum()
    return weights / total if total > 0 else np.full(len(mix), 1.0 / max(len(mix), 1))


def fragmentation_delta(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float],
                        mix: Sequence[Vector], scale: Sequence[float], devices: Devices | None = None) -> float:
    """How much placing `demand` on a server with `free` left (and `devices`, in the device
    model) raises its fragmentation for `mix` (classes weighted by `size_weights`), each
    resource normalised by `scale` (1 / the cluster total). The task must fit."""
    m, k = np.asarray(mix, dtype=float), np.asarray(scale, dtype=float)
    return _delta(demand, free, capacity, m, k, size_weights(m, k), devices)


def _delta(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float], mix: np.ndarray,
           scale: np.ndarray, weights: np.ndarray, devices: Devices | None = None) -> float:
    before = np.asarray(free, dtype=float)
    states = np.stack([before - np.asarray(demand, dtype=float), before])
    rows: DeviceRows | None = None
    if devices is not None:
        rows = devices.resource, device_matrix([devices.placed(demand[devices.resource]), devices])
    lost = fragmented_matrix(states, np.asarray([capacity, capacity], dtype=float), mix, weights, rows)
    score = lost @ scale
    return float(score[0] - score[1])


class DemandMix:
    """The demand mix one server knows (`--placement min-fragmentation` and `keep-room` in the
    walks): each user's latest demand. Its arrays are built when a demand is new, not at every walk hop."""

    __slots__ = ("_arrays", "demands", "scale")

    def __init__(self, scale: Sequence[float], known: Iterable[tuple[int, Vector]] = ()) -> None:
        """`known`: (user, demand) pairs the server knows from the start (`--fragmentation-mix workload`)."""
        self.demands: dict[int, Vector] = dict(known)  # user -> its latest demand
        self.scale = np.asarray(scale, dtype=float)
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (mix, weights, shares)

    def note(self, user: int, demand: Vector) -> None:
        """`user`'s task asks for `demand` (heard in a request or a walk)."""
        if self.demands.get(user) != demand:
            self.demands[user] = demand
            self._arrays = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The mix as a classes × resources array, each class's weight (`size_weights`) and its
        dominant share (`protocols.room`'s weights), rebuilt only when a demand is new."""
        if self._arrays is None:
            mix = np.asarray(list(self.demands.values()), dtype=float)
            self._arrays = mix, size_weights(mix, self.scale), class_shares(mix, self.scale)
        return self._arrays

    def delta(self, demand: Sequence[float], free: Sequence[float], capacity: Sequence[float],
              devices: Devices | None = None) -> float:
        """`fragmentation_delta` for this mix."""
        mix, weights, _ = self.arrays()
        return _delta(demand, free, capacity, mix, self.scale, weights, devices)


def fragmented_matrix(free: np.ndarray, capacity: np.ndarray, mix: np.ndarray,
                      weights: np.ndarray | None = None, devices: DeviceRows | None = None) -> np.ndarray:
    """`fragmented` for every server at once: `free` and `capacity` are servers × resources,
    `mix` tasks × resources, `weights` the tasks' (summing to 1; default equal); the result is
    servers × resources. With `devices` (the device model) a task fits only where its devices
    do, and of the device resource a fitting task loses the room of the devices it cannot use."""
    if not len(mix):
        return np.zeros(free.shape, dtype=float)
    usable = np.all(mix[None, :, :] <= (free + REL_TOL * capacity)[:, None, :], axis=2)  # servers × tasks
    if devices is not None:
        usable &= device_usable(mix[:, devices[0]], devices[1])
    lost = ~usable[:, :, None] | (mix[None, :, :] <= 0.0)  # servers × tasks × resources
    share: np.ndarray = lost.mean(axis=1) if weights is None else np.einsum("str,t->sr", lost, weights)
    result: np.ndarray = share * np.maximum(free, 0.0)
    if devices is not None:
        w = np.full(len(mix), 1.0 / len(mix)) if weights is None else weights
        r, room = devices
        need = device_need(mix[:, r])  # tasks
        unusable = np.where(room[:, None, :] < need[None, :, None] - REL_TOL, room[:, None, :], 0.0).sum(axis=2)
        per_task = np.where(usable, unusable, np.maximum(free[:, r], 0.0)[:, None])  # servers × tasks
        result[:, r] = per_task @ w
    return result


def least_fragmentation(demand: Sequence[float], free: Sequence[Sequence[float]], capacity: Sequence[Sequence[float]],
                        mix: Sequence[Vector], scale: Sequence[float],
                        devices: Sequence[Devices] | None = None) -> int:
    """Index of the server where `demand` fits and adds the least fragmentation for `mix`
    (classes weighted by `size_weights`; ties within rounding to the lower index); -1 if it
    fits nowhere. `devices`: each server's, in the device model."""
    candidates = [s for s, (left, cap) in enumerate(zip(free, capacity)) if fits(demand, left, cap)]
    if devices is not None:
        candidates = [s for s in candidates if devices[s].fits(demand[devices[s].resource])]
    if not candidates:
        return -1
    if not mix:
        return candidates[0]
    f = np.asarray([free[s] for s in candidates], dtype=float)
    c = np.asarray([capacity[s] for s in candidates], dtype=float)
    m = np.asarray(mix, dtype=float)
    k = np.asarray(scale, dtype=float)
    w = size_weights(m, k)
    after: DeviceRows | None = None
    before: DeviceRows | None = None
    if devices is not None:
        r = devices[0].resource
        after = r, device_matrix([devices[s].placed(demand[r]) for s in candidates])
        before = r, device_matrix([devices[s] for s in candidates])
    delta = (fragmented_matrix(f - np.asarray(demand, dtype=float), c, m, w, after) @ k
             - fragmented_matrix(f, c, m, w, before) @ k)
    best, best_delta = candidates[0], float(delta[0])
    for server, value in zip(candidates[1:], delta[1:].tolist()):
        if improves(value, best_delta):
            best, best_delta = server, value
    return best
