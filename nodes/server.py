"""Resource nodes that allocate: the server roles of the distributed protocols (SPEC §3–4).

`AllocatingServer` is an overlay peer (Cyclon and gradient, `overlay.peer`) with a capacity.
It proposes tasks to their users, reserving the demand at once, so two proposals can never
oversubscribe it; an `Accept` starts the task (and tells the harness), a `Decline` gives the
reservation back. **Placement** (SPEC §4): a server that decides to allocate a task it has no
room for sends it on a walk over its Cyclon neighbours; the first server on the walk with
room proposes it. Decisions the thesis leaves open:
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

`HomeServer` adds the users homed on the server (the `home` gateway, SPEC §3): the `G_i`
each last reported (a user's share travels with its tasks), its pending task, and whether
that task is out being placed ("busy": a user has one task at a time). Its utility is eq.
4.2, `−min G_i` over its users, `−∞` without any. A failed walk marks the user *saturated*
(`mark_saturated`, on by default): it then counts as `+∞` in that minimum, so a user that
cannot grow does not hold up the rest (thesis ch. 6). Decision: a bounded walk can miss the
last servers with room, so the home retries a marked user's walk in the background after
`saturation_retry` seconds (the runner's default: 50 ticks), doubling the wait after every
further failure. The user stays marked meanwhile — it does not reappear in the utility,
which would pull the gradient's centre back to it every time — and a retry that finds room
places the task; the user's next task then reports its new share and ends the mark.

Protocol rules subclass these and implement `on_tick`; they read only their own state and
what their messages told them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import ClassVar

from nodes.actor import handles
from nodes.messages import Accept, Decline, Proposal, TaskRequest, TaskStarted, WalkFailed, WalkTask
from nodes.monitor import AllocationMonitor
from overlay.gradient import NEG_INF
from overlay.peer import OverlayPeer
from protocols.resources import CapacityViolation, Vector, fits, give, take

__all__ = ["AllocatingServer", "HomeServer", "HomeUser", "PlacementStats"]

INF = float("inf")


class PlacementStats:
    """Counters shared by all servers of a run (the emulator reads them; nodes never do)."""

    __slots__ = ("local", "walks", "walk_hops", "walks_placed", "walks_failed", "saturation_marks", "retries",
                 "proposals", "declined")

    def __init__(self) -> None:
        self.local = 0
        self.walks = 0
        self.walk_hops = 0
        self.walks_placed = 0
        self.walks_failed = 0
        self.saturation_marks = 0
        self.retries = 0
        self.proposals = 0
        self.declined = 0

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class AllocatingServer(OverlayPeer):
    """A server that proposes tasks to users and places them locally or by a walk.

    `TICKS_ALL` says whether every server of the protocol needs the allocation tick (or only
    those with users); `counters()` are the protocol's own figures for the result document.
    """

    TICKS_ALL: ClassVar[bool] = True

    __slots__ = ("capacity", "free", "monitor", "stats", "walk_ttl", "choices", "neighbours", "_reserved")

    def __init__(
        self,
        actor_id: int,
        capacity: Vector,
        monitor: AllocationMonitor,
        stats: PlacementStats,
        *,
        view_size: int,
        cyclon_size: int,
        shuffle_length: int,
        overlay_rng: random.Random,
        choices: random.Random,
        walk_ttl: int,
        max_age: float = INF,
    ) -> None:
        super().__init__(actor_id, view_size, cyclon_size, shuffle_length, overlay_rng, NEG_INF, max_age)
        self.capacity = capacity
        self.free = list(capacity)
        self.monitor = monitor
        self.stats = stats
        self.walk_ttl = walk_ttl
        self.choices = choices  # this server's protocol choices (walk steps, ...)
        self.neighbours: list[int] = []  # a fixed neighbour set, for protocols that use one
        self._reserved: dict[tuple[int, int], Vector] = {}

    def set_neighbours(self, neighbours: Iterable[int]) -> None:
        """Fix this server's neighbour set (protocols that use one)."""
        self.neighbours = list(neighbours)

    def counters(self) -> dict[str, int]:
        """Protocol-specific counts, summed over servers into the result's `overlay` section."""
        return {}

    # -- capacity and the handshake -------------------------------------------------------
    def fits(self, demand: Vector) -> bool:
        return fits(demand, self.free, self.capacity)

    def propose(self, user: int, task: int, demand: Vector) -> None:
        """Reserve `demand` here and offer the task to its user."""
        if not fits(demand, self.free, self.capacity):
            raise CapacityViolation(f"server {self.id}: proposing task {task} of user {user} needing {demand} "
                                    f"with only {tuple(self.free)} free")
        take(self.free, demand)
        self._reserved[(user, task)] = demand
        self.stats.proposals += 1
        self.send(user, Proposal(task, self.id))

    @handles(Accept)
    def on_accept(self, msg: Accept, now: float) -> None:
        demand = self._reserved.pop((msg.user, msg.task))
        self.monitor.on_allocation(now, self.id, msg.user, msg.task, demand)
        self.send(msg.user, TaskStarted(msg.task, self.id))

    @handles(Decline)
    def on_decline(self, msg: Decline, now: float) -> None:
        give(self.free, self._reserved.pop((msg.user, msg.task)))
        self.stats.declined += 1

    # -- placement ------------------------------------------------------------------------
    def place(self, user: int, task: int, demand: Vector, home: int) -> None:
        """Place a task this server decided to allocate: here if it fits, else by a walk."""
        if fits(demand, self.free, self.capacity):
            self.stats.local += 1
            self.propose(user, task, demand)
        else:
            self.stats.walks += 1
            self._step(WalkTask(user, task, demand, home, 0, (self.id,), ()))

    @handles(WalkTask)
    def on_walk(self, msg: WalkTask, now: float) -> None:
        if fits(msg.demand, self.free, self.capacity):
            self.stats.walks_placed += 1
            self.propose(msg.user, msg.task, msg.demand)
        else:
            self._step(msg)

    def _step(self, walk: WalkTask) -> None:
        """Send the walk on to a random frontier server, or report that it found no room."""
        visited, frontier = walk.visited, walk.frontier
        known = set(visited)
        known.update(frontier)
        frontier += tuple(node for node in self.cyclon.entries if node not in known)
        if walk.hops >= self.walk_ttl or not frontier:
            self.stats.walks_failed += 1
            self.send(walk.home, WalkFailed(walk.user, walk.task))
            return
        k = int(self.choices.random() * len(frontier))
        nxt = frontier[k]
        self.stats.walk_hops += 1
        self.send(nxt, WalkTask(walk.user, walk.task, walk.demand, walk.home, walk.hops + 1, visited + (nxt,),
                                frontier[:k] + frontier[k + 1:]))


class HomeUser:
    """What a home server knows of one of its users."""

    __slots__ = ("share", "task_share", "pending", "busy", "saturated", "retry_at", "retry_wait")

    def __init__(self, task_share: float) -> None:
        self.share = 0.0  # G_i as the user last reported it
        self.task_share = task_share  # s_i: what one more task adds to G_i
        self.pending: TaskRequest | None = None  # the user's current task, once it arrived
        self.busy = False  # that task is out being placed
        self.saturated = False  # marked saturated: counts as +∞
        self.retry_at = INF  # when a marked user's walk is tried again
        self.retry_wait = 0.0  # the wait before the next retry after a failure

    def idle(self) -> bool:
        """The user has a task here that is not already being placed."""
        return self.pending is not None and not self.busy


class HomeServer(AllocatingServer):
    """A server with users homed on it; keeps its gradient utility at eq. 4.2."""

    TICKS_ALL: ClassVar[bool] = False  # a server without users has no one to allocate for

    __slots__ = ("users", "mark_saturated", "saturation_retry", "_saturated")

    def __init__(
        self,
        actor_id: int,
        capacity: Vector,
        monitor: AllocationMonitor,
        stats: PlacementStats,
        homed: Mapping[int, float],
        *,
        mark_saturated: bool = True,
        saturation_retry: float = INF,
        **overlay: object,
    ) -> None:
        """`homed` maps each user homed here to its task share `s_i` (the home knows `C`)."""
        super().__init__(actor_id, capacity, monitor, stats, **overlay)  # type: ignore[arg-type]
        self.users = {user: HomeUser(share) for user, share in sorted(homed.items())}
        self.mark_saturated = mark_saturated
        self.saturation_retry = saturation_retry
        self._saturated = 0
        self.gradient.set_utility(self.utility())

    # -- what the server reports ----------------------------------------------------------
    def counted(self) -> Iterable[tuple[int, HomeUser]]:
        """Users that count in the minimum share (not marked saturated)."""
        return ((u, r) for u, r in self.users.items() if not r.saturated)

    def min_share(self) -> float:
        """`min G_i` over the counted users; `+∞` when there are none."""
        return min((r.share for _, r in self.counted()), default=INF)

    def utility(self) -> float:
        """Eq. 4.2: `−min G_i`, `−∞` for a server without (counted) users."""
        return -self.min_share()

    def lowest(self) -> tuple[int, HomeUser] | None:
        """The counted user with the lowest `(G_i, id)`, or None."""
        return min(self.counted(), key=lambda item: (item[1].share, item[0]), default=None)

    def _changed(self) -> None:
        self.gradient.set_utility(self.utility())

    # -- users' tasks ---------------------------------------------------------------------
    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        record = self.users.get(msg.user)
        if record is None:
            raise ValueError(f"server {self.id} got a task from user {msg.user}, which is not homed here")
        record.share = msg.share
        record.pending = msg
        record.busy = False
        self._unmark(record)
        self._changed()

    def allocate(self, user: int, record: HomeUser) -> None:
        """Allocate the user's pending task: place it here or send it walking."""
        task = record.pending
        assert task is not None and not record.busy, "allocate() needs an idle user"
        record.busy = True
        self.place(user, task.task, task.demand, self.id)

    @handles(WalkFailed)
    def on_walk_failed(self, msg: WalkFailed, now: float) -> None:
        record = self.users[msg.user]
        if record.pending is None or record.pending.task != msg.task:
            return
        record.busy = False
        if not self.mark_saturated:
            return
        if record.saturated:
            record.retry_wait *= 2
        else:
            record.saturated = True
            record.retry_wait = self.saturation_retry
            self._saturated += 1
            self.stats.saturation_marks += 1
            self._changed()
        record.retry_at = now + record.retry_wait

    def _unmark(self, record: HomeUser) -> None:
        if record.saturated:
            record.saturated = False
            record.retry_at = INF
            self._saturated -= 1

    def retry_saturated(self, now: float) -> None:
        """Walk again for marked users whose retry is due (call at the start of a tick)."""
        if not self._saturated:
            return
        for user, record in self.users.items():
            if record.saturated and record.retry_at <= now and record.idle():
                self.stats.retries += 1
                self.allocate(user, record)
