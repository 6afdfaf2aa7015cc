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

**Placement** (`--placement min-fragmentation`): put a task where it *adds* the least
fragmentation, `Δ = F(free − demand) − F(free)`, where `F` sums a server's fragmentation of
each resource normalised by the cluster's total of it (the same normalisation DRFH's
heuristic uses, so no resource's units matter). Ties within rounding (`resources.improves`) go
to the lower index (centrally) or to the server the walk saw first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drfemu.protocols.resources import REL_TOL, Vector, fits, improves

__all__ = ["fragmentation_delta", "fragmented", "fragmented_matrix", "least_fragmentation"]


def fragmented(free: Sequence[float], capacity: Sequence[float], mix: Sequence[Vector]) -> list[float]:
    """Per resource, the expected free amount on one server that a task drawn from `mix` cannot
    use (0 for an empty mix). Negative free (a crashed server's marker) counts as none."""
    return fragmented_matrix(np.asarray([free], dtype=float), np.asarray([capacity], dtype=float),
                             np.asarray(mix, dtype=float))[0].tolist()


def fragmentation_delta(demand: Sequence[float], free: Sequence[float], capacity: Sequence[float],
                        mix: Sequence[Vector], scale: Sequence[float]) -> float:
    """How much placing `demand` on a server with `free` left raises its fragmentation for
    `mix`, each resource normalised by `scale` (1 / the cluster total). The task must fit."""
    before = np.asarray(free, dtype=float)
    states = np.stack([before - np.asarray(demand, dtype=float), before])
    lost = fragmented_matrix(states, np.asarray([capacity, capacity], dtype=float), np.asarray(mix, dtype=float))
    score = lost @ np.asarray(scale, dtype=float)
    return float(score[0] - score[1])


def fragmented_matrix(free: np.ndarray, capacity: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """`fragmented` for every server at once: `free` and `capacity` are servers × resources,
    `mix` tasks × resources; the result is servers × resources."""
    if not len(mix):
        return np.zeros(free.shape, dtype=float)
    usable = np.all(mix[None, :, :] <= (free + REL_TOL * capacity)[:, None, :], axis=2)  # servers × tasks
    lost = ~usable[:, :, None] | (mix[None, :, :] <= 0.0)  # servers × tasks × resources
    return lost.mean(axis=1) * np.maximum(free, 0.0)


def least_fragmentation(demand: Sequence[float], free: Sequence[Sequence[float]], capacity: Sequence[Sequence[float]],
                        mix: Sequence[Vector], scale: Sequence[float]) -> int:
    """Index of the server where `demand` fits and adds the least fragmentation for `mix`
    (ties within rounding to the lower index); -1 if it fits nowhere."""
    candidates = [s for s, (left, cap) in enumerate(zip(free, capacity)) if fits(demand, left, cap)]
    if not candidates:
        return -1
    if not mix:
        return candidates[0]
    f = np.asarray([free[s] for s in candidates], dtype=float)
    c = np.asarray([capacity[s] for s in candidates], dtype=float)
    m = np.asarray(mix, dtype=float)
    k = np.asarray(scale, dtype=float)
    delta = (fragmented_matrix(f - np.asarray(demand, dtype=float), c, m) @ k
             - fragmented_matrix(f, c, m) @ k)
    best, best_delta = candidates[0], float(delta[0])
    for server, value in zip(candidates[1:], delta[1:].tolist()):
        if improves(value, best_delta):
            best, best_delta = server, value
    return best
