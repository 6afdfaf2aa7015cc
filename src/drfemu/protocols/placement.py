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

That is **first-fit** placement (`--placement first-fit`, the thesis's): the allocating server
itself if the task fits, else the first server on the walk with room. On heterogeneous
servers it strands resources — a CPU-only task lands on a GPU server and its GPUs are left
without the CPU to use them. **Best-fit** (`--placement best-fit`) places by DRFH's heuristic
instead (`protocols.cluster.drfh_heuristic`, normalised by the cluster totals, which every
server knows as DDRF's homes do): the walk starts at the allocating server, visits servers
the same way, and after it has seen `fit_candidates` servers where the task fits (or run out
of hops or frontier) sends `FitPlace` to the one with the lowest heuristic. That server
proposes if the task still fits there; if something else took the room meanwhile, it sends
the task on an ordinary first-fit walk. **Least fragmentation** (`--placement min-fragmentation`,
issue 38, `protocols.fragmentation`) walks the same way but scores a fitting server by how much
fragmentation the task would add there for the demand mix that server knows: the demands of
its homed users and of every task whose request or walk it has handled (decision: no new
gossip; a walk carries the task's demand to every server it visits, so the servers a home's
walks cross learn its users' demands). With `--fragmentation-mix workload` (issue 52, off by
default) every server knows every user's demand from the start instead, as a scheduler that
knows its workload's task classes (Weng et al.'s scheduler takes them from the workload's
history): on the GPU-sharing trace a server seen only by CPU-only walks took their tasks where
GPU tasks would have gone (`docs/results.md`). **Keep room** (`--placement keep-room`, issue 60,
`protocols.room`, BDGDRF's default) walks the same way and scores a fitting server by the room the
task costs the demand mix that server knows — so a small task does not break a server that a
whole-server task needs while another server holds it as well. **In order** (`--placement
in-order`, issue 60) walks the same way and takes the fitting server that comes first in the
cluster's order (the workload's list of servers) among those it saw: the walk's form of first-fit
in a fixed order, central `drf`'s default policy. Where tasks end it fills the servers in that
order and leaves the last ones whole for a burst of big tasks (Slurm's node `Weight` does this
with an order an administrator sets). Decision, measured (`docs/results.md`, "Tasks that end: in
order"): an option, not a default — it matches the reference's waits because it packs in the
reference's order (another fixed order did not), and the Google trace hour ran a little slower.

This module declares the placements, their parameters and the walks' messages; what a walk does
at each server is `protocols.walks`.
"""

from __future__ import annotations

from drfemu.kernel.messages import Address, Addresses, message
from drfemu.kernel.params import Declared, ReadBy, param

__all__ = [
    "BEST_FIT",
    "COMPARING",
    "FIRST_FIT",
    "FRAGMENTATION_MIX",
    "IN_ORDER",
    "KEEP_ROOM",
    "MIN_FRAGMENTATION",
    "MIXES",
    "PLACEMENT",
    "PlacementParams",
    "SCORED_BY_MIX",
    "FitPlace",
    "FitWalk",
]

FIRST_FIT, BEST_FIT, MIN_FRAGMENTATION, KEEP_ROOM = "first-fit", "best-fit", "min-fragmentation", "keep-room"
IN_ORDER = "in-order"
COMPARING = (BEST_FIT, MIN_FRAGMENTATION, KEEP_ROOM, IN_ORDER)
"""The placements whose walks compare `--fit-candidates` fitting servers."""
SCORED_BY_MIX = (MIN_FRAGMENTATION, KEEP_ROOM)
"""The placements that score a server by the demand mix it knows (`--fragmentation-mix`)."""
MIXES = SEEN, WORKLOAD = "seen", "workload"



class PlacementParams(Declared):
    """The placement, a parameter of every run that the walks of home-based protocols and the central
    DRF rule read (`schema.params.RunParams` inherits it; `protocols.drf` lists it in its `PARAMS`)."""

    placement: str = param(
        default=FIRST_FIT, help="Where a task is placed (home-based protocols and drf): first-fit (the allocating "
        "server, else the first with room on a walk; centrally the first server in order), best-fit (DRFH's heuristic "
        "over --fit-candidates servers), min-fragmentation (the server where the task adds the least fragmentation "
        "for the known demand mix, over --fit-candidates servers), keep-room (the server where the task costs the "
        "known demand mix the least room, DRFH's heuristic between equals, over --fit-candidates servers; bdgdrf's "
        "default) or in-order (the first in the workload's order of servers among --fit-candidates; centrally "
        "first-fit).",
        choices=(FIRST_FIT, *COMPARING), read_by=ReadBy.WALKS,
        echo="placement_mode")
    fragmentation_mix: str = param(
        default=SEEN, help="The demand mix a server's min-fragmentation or keep-room walk scores by: seen (the demands "
        "of the tasks it has handled) or workload (every user's, known to every server from the start, as a scheduler "
        "that knows its workload's task classes; a protocol change — docs/results.md, issue 52).", choices=MIXES,
        read_by=ReadBy.WALKS, when=("placement", SCORED_BY_MIX))


PLACEMENT, FRAGMENTATION_MIX = PlacementParams.PARAMS


@message
class FitWalk:
    """A best-fit placement walk (`--placement best-fit` or `min-fragmentation`): it visits servers as
    a placement walk does, remembering the fitting server with the lowest score (`best`, `best_h`:
    the DRFH heuristic, or the fragmentation the task adds),
    until it has seen `left` more fitting servers or runs out of hops or frontier."""

    user: Address
    task: int
    demand: tuple[float, ...]
    home: Address
    hops: int
    visited: Addresses
    frontier: Addresses
    best: Address
    best_h: float
    left: int


@message
class FitPlace:
    """The end of a best-fit walk: the server it chose is asked to take the task."""

    user: Address
    task: int
    demand: tuple[float, ...]
    home: Address
