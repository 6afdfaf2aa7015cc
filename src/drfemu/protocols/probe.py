"""Sparrow-like probes (thesis §4.2, Algorithm 4, eq. 4.1; SPEC §4 `probe`).

The gateway sends each task to a uniformly random server. That server stores it and
forwards a copy to the `d` (default 2) of its fixed neighbours with the lowest CPU load
(eq. 4.1, `CPU used / CPU capacity`, as last polled); a forwarded copy is stored, not
forwarded again. Every tick each server polls its neighbours' loads and proposes the stored
task with the lowest carried `G_i` that fits on it (ties: lower user id, then earlier task).
The user accepts the first proposal for its current task and declines the others, and a
declined server drops the copy and frees its reservation.

`--probe-load` says what "load" is. `cpu` is eq. 4.1, the thesis's. `dominant` uses every
resource: a server reports its used fraction of each resource (a resource it does not have
counts as full), and a task is forwarded to the neighbours whose load *for that task* — the
largest used fraction over the resources the task demands — is lowest. So a GPU task is not
sent to servers without GPUs, and a memory-heavy task avoids servers whose memory is taken
while their CPU is idle. `room` (ours) goes one step further and ranks neighbours by how much
of their *free* room the task would take (`demand / free`, largest over the resources it
demands): a fraction says nothing of absolute room, and a small machine at 60 % can have less
room than a large one at 90 %; a neighbour where the task does not fit ranks last.

Decisions, following the thesis: neighbours are a fixed random graph of out-degree `P`; a
server only ever places on itself. Ties in load go to the neighbour listed first.

`--probe-poll-every k` (ours, issue 40; default 1, the thesis's every tick) has a server poll
its neighbours on its 1st, (k+1)-th, … tick only: the loads it forwards by and the band's
minimum it hears are then up to k ticks old. The polls are nearly all of a probe run's traffic
(on the trace hour 87 % of its messages), so it is the probe's cheaper emulation, with a
different protocol; at most `HEARD_TICKS`, so that a minimum heard is still remembered at the
next poll. `docs/performance.md` measures it on the trace hour.

**Tasks probed again, allocated in share order** (issue 38). The thesis's probe
(`--probe-retry 0 --probe-band 0`, kept for the reproduction) lets a copy wait where it was
sent, so a task whose copies sit on full servers is never placed (the thesis's "that task and
user cannot allocate a task anymore"), and every such run ended as stalled: on Google 100 × 20
at 0.12–0.31 of DRF's minimum share while 11–60 servers had room; on GPU clusters most stuck
copies were GPU tasks on servers with no GPU at all. By default:
- a server never keeps a copy its *capacity* could never hold (it still forwards the copies of
  a task the gateway sent it);
- a user whose task has had no proposal `--probe-retry` ticks (default 1) after it was sent
  asks the gateway again, and the task goes to a new random server, which forwards it as
  before (`nodes.user`, `reprobe`). Earlier copies stay where they are; a server keeps one
  copy per user, so a re-probe adds no state, and a late proposal from an old copy is declined;
- a server proposes a copy only while its user's share is at most `m + band · s_i`
  (`--probe-band`, default 0.5, in units of the user's own task share `s_i`, as BDGDRF's
  band), where `m` is the lowest share carried by the copies it heard in the last
  `HEARD_TICKS` ticks, leaving out users whose share has not moved for `STUCK_TICKS` (their
  task fits nowhere, as a saturation mark says in the home-based protocols). The band orders
  allocations and never prevents one: a server that held back a fitting copy `STUCK_TICKS`
  ticks in a row proposes its lowest fitting copy. Servers tell the user behind their minimum
  with each load reply (`LowestShare`), so the minimum spreads over the neighbour graph: heard
  only from its own copies, a user of small tasks was known to few servers and the others
  went on without it (Google 100 × 20 seed 2: 0.46 of DRF's minimum share at P = 5).
Why the band, measured: re-probing alone ended every run saturated, but on Google 100 × 20
at 0.16–0.27 of DRF's minimum share: each user has one task out at a time and every task waits about as long, so
users gain tasks at equal *rates*, and a user of small tasks ends with a fraction of a large
one's share (Google 100 × 20: 144 tasks of 0.00008 against DRF's 614). With the band the
minimum share is DRF's (Google 100 × 20, P = 2..10, seeds 1–5: 0.96–1.03 of it) at 1.05–1.54
of its run-time (`docs/results.md`); on tasks that end the band can hold a copy back while its
server could run it, a cost `docs/faults.md` measures (`--probe-band 0` has none).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.errors import InputError
from drfemu.kernel.messages import Address, TaskRequest, handles, message
from drfemu.kernel.params import Kind, Param
from drfemu.kernel.resources import Vector, dominant_share, fits
from drfemu.protocols.polls import Answer, Record
from drfemu.protocols.rule import Server, ServerRule
from drfemu.protocols.spec import Gateway, ProtocolSpec

__all__ = ["HEARD_TICKS", "PROBE", "STUCK_TICKS", "LoadReply", "LoadRequest", "LoadsReply", "LowestShare", "ProbeRule",
           "ProbeTask", "room_load", "task_load", "used_fractions"]


@message
class ProbeTask:
    """A copy of a user's task forwarded to a lightly loaded neighbour."""

    user: Address
    task: int
    demand: tuple[float, ...]
    share: float


@message
class LowestShare:
    """The lowest share a server heard lately, from a copy of `user`'s `task`, answered with its
    load (`--probe-band` > 0): the band's minimum spreads over the neighbour graph."""

    user: Address
    task: int
    share: float


@message
class LoadRequest:
    """Asks a neighbour for its CPU load."""

    sender: Address


@message
class LoadReply:
    """A server's CPU load (eq. 4.1)."""

    sender: Address
    load: float


@message
class LoadsReply:
    """A server's used fraction and free amount of every resource (`--probe-load dominant|room`)."""

    sender: Address
    used: tuple[float, ...]
    free: tuple[float, ...]


def cpu_load(server: Server) -> float:
    """Eq. 4.1 on the first resource (CPU)."""
    return 1.0 - server.free[0] / server.capacity[0] if server.capacity[0] > 0 else 1.0


def used_fractions(free: Vector | list[float], capacity: Vector) -> tuple[float, ...]:
    """The used fraction of each resource; a resource the server does not have counts as full."""
    return tuple(1.0 - f / c if c > 0 else 1.0 for f, c in zip(free, capacity))


def task_load(used: tuple[float, ...], demand: Vector) -> float:
    """A server's load for a task: its largest used fraction over the resources the task demands."""
    return max((u for u, d in zip(used, demand) if d > 0), default=0.0)


def room_load(free: tuple[float, ...], demand: Vector) -> float:
    """How much of a server's free room a task would take: the largest `demand / free` over the
    resources it demands (above 1: it does not fit; `inf` where nothing of one is free)."""
    return max((d / f if f > 0 else math.inf for d, f in zip(demand, free) if d > 0), default=0.0)


def _same_minimum(said: tuple[float, int, int] | None, lowest: tuple[float, int, int]) -> bool:
    """Would a notice of `lowest` say exactly what the one of `said` says: equal, and its share of
    the same type and sign (`0.0 == -0.0`, but they are not the same message)?"""
    return (said is not None and said == lowest and type(said[0]) is type(lowest[0])
            and math.copysign(1.0, said[0]) == math.copysign(1.0, lowest[0]))


compiled_hear: Callable[..., None] | None = None  # `ProbeRule.hear` in C, where it was built (typed by its stub)
compiled_tick: Callable[[type], Any] | None = None  # the maker of a probe server's `on_tick` in C
compiled_replies: Callable[..., Callable[[Any, Any], Any]] | None = None  # the poll's answer in C, made from the reference
if compiled_module("drfemu.protocols._probe") is not None:
    from drfemu.protocols._probe import hear as compiled_hear
    from drfemu.protocols._probe import replies_of as compiled_replies
    from drfemu.protocols._probe import tick_method as compiled_tick

HEARD_TICKS = 10
"""The band's memory: shares heard longer ago than this many ticks do not count."""
STUCK_TICKS = 20
"""A user whose share has not moved for this many ticks is left out of the band's minimum."""

LOADS: dict[str, Callable[[Any, Vector], float]] = {
    "cpu": lambda report, demand: report.load,
    "dominant": lambda report, demand: task_load(report.used, demand),
    "room": lambda report, demand: room_load(report.free, demand),
}
"""A neighbour's load for a task under each `--probe-load`, from its last report."""


class ProbeRule(ServerRule):
    """A probe server's rule; the server's fixed random `neighbors` are its probe targets."""

    PARAMS = (Param("probe_d", Kind.INT, 2, "probe: neighbours a task is forwarded to (at most --neighbors).", ge=1,
                    echo="probe_d"),
              Param("probe_load", Kind.TEXT, "cpu", "probe: a server's load, cpu (eq. 4.1), dominant (the largest used "
                    "fraction the task demands) or room (the share of free room the task takes).",
                    choices=tuple(LOADS), echo="probe_load"),
              Param("probe_retry", Kind.INT, 1, "probe: ticks a user waits for a proposal before its task is "
                    "probed again at another random server (0: never, the thesis's probe).", ge=0, le=10**9,
                    unit="ticks", echo="probe_retry_ticks"),
              Param("probe_band", Kind.FLOAT, 0.5, "probe: a server proposes a copy only while its share is at most "
                    "the lowest share it heard lately plus this many of the user's task shares (0: no band, the "
                    "thesis's probe).", ge=0, le=1e6, echo="probe_band"),
              Param("probe_poll_every", Kind.INT, 1, "probe: a server polls its neighbours' loads on every this "
                    "many-th tick (1: every tick, the thesis's; a cheaper emulation that changes the protocol).",
                    ge=1, le=HEARD_TICKS, unit="ticks", echo="probe_poll_every_ticks"))
    TICKS_ALL = True
    STRANDS = False  # re-probed by default; with --probe-retry 0 (the thesis's probe) copies wait for ever

    __slots__ = ("band", "counting", "d", "heard", "held_back", "low", "low_known", "mode", "poll", "poll_every",
                 "reports", "retry", "stored", "ticks", "said_load", "said_lowest", "unfit")

    @staticmethod
    def check_params(values: Mapping[str, Any]) -> None:
        """A task is forwarded to `d` of `P` neighbours, so `d` cannot exceed `P`."""
        if values["probe_d"] > values["neighbors"]:
            raise InputError(f"--probe-d ({values['probe_d']}) must be at most --neighbors ({values['neighbors']})")

    @staticmethod
    def reprobe_ticks(values: Mapping[str, Any]) -> int:
        """A user asks the gateway again after `--probe-retry` ticks without a proposal."""
        return int(values["probe_retry"])

    def __init__(self, probe_d: int = 2, probe_load: str = "cpu", probe_retry: int = 1,
                 probe_band: float = 0.5, probe_poll_every: int = 1) -> None:
        self.d = probe_d
        self.poll_every = probe_poll_every
        self.mode = probe_load
        self.retry = probe_retry  # the users act on it (`reprobe_ticks`); here: 0 keeps every copy, as the thesis
        self.band = probe_band
        self.heard: dict[int, tuple[float, int, int, int]] = {}  # user -> (share, tick heard, tick it took it, task)
        self.counting: set[int] = set()  # the users whose entry in `heard` may still count (`_lowest`)
        self.ticks = 0
        self.held_back = 0  # ticks in a row the band held back a copy that fits here
        self.low: tuple[float, int, int] | None = None  # `_lowest()` as of now, while `low_known`
        self.low_known = False
        self.reports: dict[int, LoadReply | LoadsReply] = {}  # neighbour -> its last load report
        self.stored: dict[int, tuple[int, float, Vector]] = {}  # user -> (task, share, demand) of its latest task
        self.unfit = -1  # the server's `room_version` when `offer` last found no stored copy fitting (-1: none since)
        # The last load reply and lowest-share notice sent, sent again while what they say holds
        # (messages are immutable; a server answers each neighbour every tick, mostly unchanged).
        self.said_load: LoadReply | None = None
        self.said_lowest: tuple[tuple[float, int, int] | None, LowestShare | None] = (None, None)
        self.poll: LoadRequest  # this server's load request, the same every tick, made by `start`

    def start(self, server: Server) -> None:
        """Before the first poll every neighbour counts as idle."""
        self.poll = LoadRequest(server.id)
        m = len(server.capacity)
        self.reports = {n: LoadReply(n, 0.0) if self.mode == "cpu" else LoadsReply(n, (0.0,) * m, (math.inf,) * m)
                        for n in server.neighbors}

    def _store(self, user: int, task: int, share: float, demand: Vector) -> None:
        """Keep a copy of `user`'s task; a newer task of the user replaces an older copy, which is
        dead (a user has one task at a time: it sent a newer one because the older one started)."""
        held = self.stored.get(user)
        if held is None or held[0] < task:
            self.stored[user] = (task, share, demand)
            self.unfit = -1

    @handles(LowestShare)
    def hear(self, server: Server, msg: TaskRequest | ProbeTask | LowestShare, now: float) -> None:
        """Note the share a copy of a user's task carries (a late copy of an older task is stale);
        it is also how a `LowestShare` is handled — by `protocols._probe.hear` (`src/native/_probe.c`)
        where it was built, which this method is the reference of."""
        user, task, share = msg.user, msg.task, msg.share
        heard = self.heard.get(user)
        if heard is not None and task < heard[3]:
            return
        since = heard[2] if heard is not None and heard[0] == share else self.ticks
        self.heard[user] = (share, self.ticks, since, task)
        counts = self.ticks - since <= STUCK_TICKS  # heard now: it counts unless stuck, and stuck it stays
        if counts:
            self.counting.add(user)
        if self.low_known:  # keep the minimum up to date: only this user's entry changed this tick
            if self.low is not None and self.low[1] == user:
                self.low_known = False
                server.republish()
            elif counts and (self.low is None or (share, user, task) < self.low):
                self.low = (share, user, task)
                server.republish()

    def _could_hold(self, server: Server, demand: Vector) -> bool:
        """Could this server ever hold the task (always, in the thesis's probe)?"""
        return not self.retry or fits(demand, server.capacity, server.capacity)

    def _lowest(self) -> tuple[float, int, int] | None:
        """(share, user, task) of the band's minimum, or None. Asked at every load request, so it
        is computed once a tick and kept up to date by `hear` (a tick can make entries too old).

        Decision (issue 58): it looks only at the entries that may still count (`counting`). An
        entry too old or stuck at one tick is so at every later tick until `hear` changes it, which
        puts its user back unless stuck, so it leaves `counting` when found so (on the trace's first 5 minutes a
        server looking holds 13.8 entries on average, of which 0.96 count). The entries are totally
        ordered (one per user, a share is a float and never NaN), so the order they are looked at
        in does not change which is least."""
        if not self.low_known:
            now = self.ticks
            heard, counting = self.heard, self.counting
            low = None
            for user in tuple(counting):  # `min` of a generator, without its frames
                share, last, since, task = heard[user]
                if now - last <= HEARD_TICKS and now - since <= STUCK_TICKS:
                    entry = (share, user, task)
                    if low is None or entry < low:
                        low = entry
                else:
                    counting.discard(user)
            self.low = low
            self.low_known = True
        return self.low

    def _minimum(self) -> float:
        """The lowest share heard in the last `HEARD_TICKS` ticks from users whose share moved in
        the last `STUCK_TICKS`. Every user heard stays remembered (one entry per user), so a
        stuck user heard again after a while is still known to be stuck."""
        lowest = self._lowest()
        return 0.0 if lowest is None else lowest[0]

    @handles(TaskRequest)
    def on_task_request(self, server: Server, msg: TaskRequest, now: float) -> None:
        if self.band:
            self.hear(server, msg, now)
        if self._could_hold(server, msg.demand):
            self._store(msg.user, msg.task, msg.share, msg.demand)
        load, reports, demand = LOADS[self.mode], self.reports, msg.demand
        lightest = sorted(server.neighbors, key=lambda n: load(reports[n], demand))[: self.d]
        copy = ProbeTask(msg.user, msg.task, msg.demand, msg.share)
        for neighbour in lightest:
            server.send(neighbour, copy)

    @handles(ProbeTask)
    def on_probe_task(self, server: Server, msg: ProbeTask, now: float) -> None:
        if self.band:
            self.hear(server, msg, now)
        if self._could_hold(server, msg.demand):
            self._store(msg.user, msg.task, msg.share, msg.demand)

    def on_tick(self, server: Server, now: float) -> None:
        """Poll the neighbours' loads (on every `poll_every`-th tick), then `offer` a stored copy.
        Where `protocols._probe` was built, a probe server's tick runs this in C (`NODE_TICK`), the
        same reads, writes and calls in the same order; this method is its reference."""
        self.ticks += 1
        self.low_known = False
        server.republish()  # the lowest share it publishes is that of the new tick
        if self.poll_every == 1 or self.ticks % self.poll_every == 1:
            poll = self.poll
            for neighbour in server.neighbors:
                server.send(neighbour, poll)
        if self.stored:
            self.offer(server)

    def offer(self, server: Server) -> None:
        """Propose the lowest stored copy that fits here, while the band lets it (one a tick).

        Decision (issue 58, 2026-12-03): a pass that finds no stored copy fitting changes nothing,
        so until a copy is stored or the server's room changes (`Server.room_version`) the next
        passes are skipped (on the trace's first 3 minutes, 96 % of the passes found none). The band's
        minimum it would have asked for first is then found at the tick's first load request
        instead, the same minimum (`_lowest`)."""
        if self.unfit == server.room_version:
            return
        stored = self.stored
        limit = self._minimum() if self.band and self.held_back < STUCK_TICKS else math.inf
        total = server.homes.total
        for user in sorted(stored, key=lambda u: (stored[u][1], u, stored[u][0])):
            task, share, demand = stored[user]
            if not server.fits(demand):
                continue
            if share > limit + self.band * (dominant_share(demand, total) if total else 0.0):
                self.held_back += 1  # it, and every copy above it, waits for the lower users
                return
            del stored[user]
            self.unfit = -1
            self.held_back = 0
            server.propose(user, task, demand)
            return
        self.unfit = server.room_version

    def load_replies(self, server: Server) -> tuple[LoadReply | LoadsReply | LowestShare, ...]:
        """What a load request gets (the poll's `Answer`): this server's load (`load_reply`) and,
        with the band, the lowest share it heard lately (`lowest_notice`). Where `protocols._probe`
        was built, the poll's answer is the C function `protocols._probe.replies_of` makes from this
        method, its reference, and the three it calls."""
        load = self.load_reply(server)
        if not self.band:
            return (load,)
        notice = self.lowest_notice()
        return (load,) if notice is None else (load, notice)

    def load_reply(self, server: Server) -> LoadReply | LoadsReply:
        """This server's load as a message. Messages are immutable: with the CPU load, the last one
        made is sent again while what it says holds (a server answers each neighbour every tick,
        mostly unchanged)."""
        if self.mode != "cpu":
            return LoadsReply(server.id, used_fractions(server.free, server.capacity), tuple(server.free))
        cpu, last = cpu_load(server), self.said_load
        load = last if last is not None and last.load == cpu else LoadReply(server.id, cpu)
        self.said_load = load
        return load

    def lowest_notice(self) -> LowestShare | None:
        """The band's minimum as a notice (`LowestShare`), or None while there is none; the last
        one made again while it says the same (a new tick's minimum is often the last one again)."""
        lowest = self.low if self.low_known else self._lowest()
        if lowest is None:
            return None
        said, notice = self.said_lowest
        if notice is None or not _same_minimum(said, lowest):
            notice = LowestShare(lowest[1], lowest[2], lowest[0])
            self.said_lowest = (lowest, notice)
        return notice

    # The answer in C where it was built: `load_replies` with the bodies of the methods it calls, while they are these.
    POLLS = (Answer(LoadRequest, compiled_replies(load_replies, load_reply, lowest_notice, _lowest)
                    if compiled_replies else load_replies),
             Record(LoadReply, "reports"), Record(LoadsReply, "reports"))
    # The notices' handler in C where it was built (`kernel.messages.collect_handlers`); `hear` is its reference.
    COMPILED_HANDLERS: ClassVar[dict[type, Callable[..., None]]] = {LowestShare: compiled_hear} if compiled_hear else {}
    NODE_TICK: ClassVar[Callable[[type], Any] | None] = compiled_tick  # `on_tick` in C for its servers, where built


PROBE = ProtocolSpec("probe", "Sparrow-like probes to the d least-loaded of P random neighbours", Gateway.RANDOM,
                     server_rule=ProbeRule)
