"""A placement walk's next step (`protocols.placement` says what the walks are and decides).

Each hop goes to a uniformly random server of the walk's frontier, grown by the Cyclon view of
the server it is at (`overlay.cyclon.frontier_hop`, a C accelerator with its Python reference);
these functions decide what the walk does there. They live apart from the placement's
parameters so that reading the parameters (the workloads, sweeps and reports do) loads no
accelerator.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from drfemu.kernel.messages import WalkFailed, WalkTask
from drfemu.kernel.resources import improves
from drfemu.overlay.cyclon import frontier_hop
from drfemu.protocols.placement import FitPlace, FitWalk

__all__ = ["fit_walk_step", "walk_step"]


def walk_step(walk: WalkTask, peers: Iterable[int], ttl: int, rng: random.Random) -> tuple[int, WalkTask | WalkFailed]:
    """The next message of a walk at a server with no room whose Cyclon view names `peers`:
    `(next server, the walk one hop on)`, or `(home, WalkFailed)` when it is out of hops or
    frontier."""
    hop = None if walk.hops >= ttl else frontier_hop(walk.visited, walk.frontier, peers, rng)
    if hop is None:
        return walk.home, WalkFailed(walk.user, walk.task)
    nxt, visited, frontier = hop
    return nxt, WalkTask(walk.user, walk.task, walk.demand, walk.home, walk.hops + 1, visited, frontier)


def fit_walk_step(walk: FitWalk, here: int, h_here: float | None, peers: Iterable[int], ttl: int,
                  rng: random.Random) -> tuple[int, FitWalk | FitPlace | WalkFailed]:
    """The next message of a best-fit walk at server `here`, where the task fits with heuristic
    `h_here` (None: it does not fit): the walk one hop on, or, once it has gathered enough
    fitting servers or is out of hops or frontier, a `FitPlace` to the best one it saw (to
    `here` itself when that is the best), or `WalkFailed` to the home when none fitted."""
    best, best_h, left = walk.best, walk.best_h, walk.left
    if h_here is not None:
        left -= 1
        if improves(h_here, best_h):  # ties within rounding stay with the server seen first
            best, best_h = here, h_here
    hop = None if left <= 0 or walk.hops >= ttl else frontier_hop(walk.visited, walk.frontier, peers, rng)
    if hop is None:
        if best < 0:
            return walk.home, WalkFailed(walk.user, walk.task)
        return best, FitPlace(walk.user, walk.task, walk.demand, walk.home)
    nxt, visited, frontier = hop
    return nxt, FitWalk(walk.user, walk.task, walk.demand, walk.home, walk.hops + 1, visited, frontier, best, best_h,
                        left)
