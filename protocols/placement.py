"""Task placement by walks (SPEC §4): where a task goes when its allocator has no room.

A server that decides to allocate a task it has no room for sends it on a walk over its
Cyclon neighbours; the first server on the walk with room proposes it. Decisions the thesis
leaves open:
- the walk never visits a server twice: it carries the servers it visited and its
  *frontier*, the not-yet-visited servers named in the Cyclon views of the servers it
  visited; each hop goes to a uniformly random frontier server. Every hop therefore reaches
  a new server, and a walk of `|S| − 1` hops has tried every server the Cyclon graph
  connects. A plain random walk (each hop to a random neighbour of the current server) of
  `|S|` hops saw only about 90 % of the servers on the Google cases, and the users whose
  walks missed the last servers with room were marked saturated while room existed: DGDRF
  then made errors (0.2 % on 60 machines × 12 users) and runs ended with capacity unused;
- it is bounded by `walk_ttl` hops (default: the number of servers); out of hops, or out of
  frontier, it reports `WalkFailed` to the task's home server.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from protocols.messages import WalkFailed, WalkTask

__all__ = ["walk_step"]


def walk_step(walk: WalkTask, peers: Iterable[int], ttl: int, rng: random.Random) -> tuple[int, WalkTask | WalkFailed]:
    """The next message of a walk at a server with no room whose Cyclon view names `peers`:
    `(next server, the walk one hop on)`, or `(home, WalkFailed)` when it is out of hops or
    frontier."""
    visited, frontier = walk.visited, walk.frontier
    known = set(visited)
    known.update(frontier)
    frontier += tuple(node for node in peers if node not in known)
    if walk.hops >= ttl or not frontier:
        return walk.home, WalkFailed(walk.user, walk.task)
    k = int(rng.random() * len(frontier))
    nxt = frontier[k]
    return nxt, WalkTask(walk.user, walk.task, walk.demand, walk.home, walk.hops + 1, visited + (nxt,),
                         frontier[:k] + frontier[k + 1:])
