"""DDRF (thesis Algorithm 5, eq. 3.8; SPEC §4 `ddrf-random`, `ddrf-gradient`).

Each tick a home server takes its users in ascending `(G_i, id)` and allocates for the first
one with a pending task whose `G_i` is at most the minimum share every neighbour last
reported (`+∞` until a neighbour has reported: Algorithm 5 starts its table at ∞). Then it
asks every neighbour for its current minimum share; the request carries the sender's own
value, which the receiver records too (Algorithm 5's `ONRESOURCEUPDATEREQ`), so knowledge
flows both ways along a link. A server reports `+∞` when it has no counted users.

The neighbour set is fixed while the server allocates: `P` uniformly random servers
(`ddrf-random`), or the server's own gradient view once it has settled (`ddrf-gradient`).
Decision: only servers with users allocate and poll — the thesis notes the others need not
(§4.3) — so the measured cost is `2·|homes|·P` messages a tick against eq. 4.3's worst case
`2·|S|·P`.

**ddrf-gradient's freeze is a node-local rule.** The thesis freezes the gradient "once
converged", which only an observer with global knowledge can tell. Here every server runs
the gradient from the start and, at each tick, compares its view's members with the tick
before: once they have stayed the same for `freeze_after` ticks, or `freeze_after` ticks
after its view first showed a server whose users hold resources (allocation has begun
there), or once `warmup_cap` ticks have passed, it fixes them as its neighbour set, stops
starting gradient exchanges (it still answers them) and reports `NeighborsFixed`. A server
with users allocates only once it has frozen. Every server ticks under `ddrf-gradient` (a
server without users only to freeze; once frozen, the engine skips its ticks, which would do
nothing, until a task arrives or it thaws: `nodes.actor.Actor.idle_tick`).
The result reports when the last server with users first froze and how many froze on their
ideal view (measured by the observer, never used by the nodes).

**Allocation elsewhere ends the wait** (decision, issue 52). Once homes allocate, their
utilities move every tick, and a home whose view had not settled before that — the homes at
the top of the order, whose views reach down among the allocating ones — saw its view change
every tick until `warmup_cap`: on openb 100 × 20 draws its users waited up to 50 s of a 56 s
run, and one of them ended with no task while its task had fitted on 74 of 100 servers. The
start of allocation is what the thesis's single "converged" moment marks, and a home sees it
in its own view (a descriptor with a finite utility below zero), so it freezes at most
`freeze_after` ticks later; a thawed server (below) too. Measured (`docs/results.md`, issue
52's follow-up): on openb 100 × 20 with run seed 1 every user served (on three of five draws
one had had none); on the Google cases as many homes frozen on their ideal view, minimum
shares within 2.9 %, the mean error ratio over seeds 1–5 within −0.04 and +0.02 of before.
Decision: thaws keep the rule. Re-freezing a thawed view by stability alone was measured on
issue 37's crash study (`docs/faults.md`): one run of 150 rose above 0.95 of the fault-free
minimum share (0.94 → 0.97), another fell below it, and the worst error ratios of the three
seeds rose from 11–12 % to 19–45 %.

**A frozen view re-forms after a failure** (issue 37). A server thaws — runs the gradient
again and freezes anew by the same rule, allocating nothing meanwhile — when the failure
detector says a member of its fixed set crashed, and when it adopts a user (the gateway
re-homed it after its home crashed) though it froze without users. Measured on Google 50 × 10,
one server down from 10 s to 24 s, seeds 2 and 3, every server in turn: without the thaw the
worst crashes cut the minimum share at saturation to 0.12–0.17 of the fault-free run's and
lifted the error ratio from 3–11 % to 39–64 %. The adopted users' new home had frozen among
servers without users, so every neighbour reported `+∞` and nothing bounded them; the
survivors' views kept a hole. With the thaw: `docs/faults.md`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.events import NeighborsFixed
from drfemu.kernel.messages import Address, message
from drfemu.kernel.params import Kind, Param
from drfemu.overlay.gradient import NEG_INF
from drfemu.protocols.homes import INF
from drfemu.protocols.polls import Answer, Record
from drfemu.protocols.rule import Server, ServerRule
from drfemu.protocols.spec import Gateway, GradientUse, ProtocolSpec

__all__ = ["DDRF_GRADIENT", "DDRF_RANDOM", "DdrfGradientRule", "DdrfRule", "MinShareReply", "MinShareRequest"]


@message
class MinShareRequest:
    """Asks a neighbour for its minimum share; carries the sender's own."""

    sender: Address
    share: float


@message
class MinShareReply:
    """A server's current minimum share."""

    sender: Address
    share: float


compiled_tick: Callable[[type], Any] | None = None  # the maker of a DDRF server's `on_tick` in C, where built
if compiled_module("drfemu.protocols._ddrf") is not None:
    from drfemu.protocols._ddrf import tick_method as compiled_tick


class DdrfRule(ServerRule):
    """DDRF over the server's fixed `neighbors`."""

    STALE_ROUNDS: ClassVar[int] = 10

    __slots__ = ("reported", "_round", "_askers", "_polled", "_request")

    def __init__(self) -> None:
        self.reported: dict[int, float] = {}
        self._round = 0  # polling rounds so far
        self._askers: set[int] = set()  # the servers that polled this one before the last check (`_forget_silent`)
        self._polled: dict[int, MinShareRequest] = {}  # those that polled it since, with their last request
        self._request: MinShareRequest | None = None  # this tick's request, made again when the share changes

    def start(self, server: Server) -> None:
        self.reported = {n: INF for n in server.neighbors}

    def on_tick(self, server: Server, now: float) -> None:
        """Allocate for the lowest idle user within the neighbours' bound, then poll them. Where
        `protocols._ddrf` was built, a server's tick that would only count the round and send the
        request it made before runs in C (`NODE_TICK`, `src/native/_ddrf.c`), and every other tick
        here; this method is its reference."""
        homes = server.homes
        if not homes:  # until a task arrives, which clears it (a thaw too, `DdrfGradientRule`)
            server.idle_tick = True
            return
        self._round += 1
        if self._round % self.STALE_ROUNDS == 0:
            self._forget_silent(server)
        bound = min(self.reported.values(), default=INF)  # eq. 3.8 as Algorithm 5 tests it: G_i ≤ bound
        chosen = homes.lowest(idle=True, at_most=bound)
        if chosen is not None:
            server.allocate(*chosen)
        request = self._request
        if request is None:
            request = self._request = MinShareRequest(server.id, homes.min_share())
        for neighbour in server.neighbors:
            server.send(neighbour, request)

    def on_utility(self, server: Server, now: float) -> None:
        """The minimum share changed (the utility is its negative, and the server calls this
        whenever it changes): the request and the reply it published say the old one."""
        self._request = None
        server.republish()

    def on_peer_down(self, server: Server, peer: int) -> None:
        """A crashed server's last report would bound this home for ever: it goes (a neighbour
        counts as `+∞` again, as before its first report, until its next life reports)."""
        self.reported.pop(peer, None)

    def _forget_silent(self, server: Server) -> None:
        """Drop the share of a server that polled this one but has not for `STALE_ROUNDS` rounds
        and is not a neighbour. Decision (issue 37): a server whose neighbour set changed (a
        ddrf-gradient thaw) stops polling its former neighbours, and its last, ever older share
        would bound them for good (measured: a run stalled with every user at one task). A
        server that polls does so every round, so without faults nothing is ever dropped.

        It runs every `STALE_ROUNDS` rounds, so "not for `STALE_ROUNDS` rounds" is "not since
        the last time it ran": the servers in `_askers` and not in `_polled`."""
        silent = self._askers - self._polled.keys() - set(server.neighbors)
        for peer in silent:  # the order they go in leaves `reported` as it is
            self.reported.pop(peer, None)
        self._askers = (self._askers - silent) | self._polled.keys()
        self._polled.clear()

    def min_share_replies(self, server: Server) -> tuple[MinShareReply]:
        """What a request is answered with: this server's minimum share (republished by `on_utility`)."""
        return (MinShareReply(server.id, server.homes.min_share()),)

    # A request's share goes to `reported`, and its sender to `_polled`; a reply's share goes to `reported`.
    POLLS = (Answer(MinShareRequest, min_share_replies, keep=(("reported", "share"), ("_polled", None))),
             Record(MinShareReply, "reported", "share"))  # (`protocols.polls`)
    NODE_TICK: ClassVar[Callable[[type], Any] | None] = compiled_tick  # `on_tick` in C for its servers, where built


def _allocating(view: Sequence[tuple[float, int, float]]) -> bool:
    """True if a descriptor in `view` shows a server whose users hold resources: a finite
    utility below zero (eq. 4.2, `−min G_i`), so allocation has begun there."""
    return any(NEG_INF < utility < 0.0 for utility, _, _ in view)


class DdrfGradientRule(DdrfRule):
    """DDRF over the server's gradient view, frozen by the node-local rule above."""

    PARAMS = (
        Param("freeze_after", Kind.INT, 20, "ddrf-gradient: a server freezes its gradient view once it has not "
              "changed for this many ticks, or this many ticks after the view first shows a server that allocates.",
              ge=1, unit="ticks", echo="freeze_after_ticks"),
        Param("warmup_cap", Kind.INT, 500, "ddrf-gradient: a server freezes its view after this many ticks even "
              "if it still changes.", ge=1, unit="ticks", echo="warmup_cap_ticks"),
    )
    TICKS_ALL = True

    __slots__ = ("freeze_after", "warmup_cap", "frozen", "thaws", "_ticks", "_stable", "_since_allocating",
                 "_members", "_fixed", "_homed")

    def __init__(self, freeze_after: int = 20, warmup_cap: int = 500) -> None:
        super().__init__()
        self.freeze_after = freeze_after
        self.warmup_cap = warmup_cap
        self.frozen = False
        self.thaws = 0
        self._ticks = 0
        self._stable = 0
        self._since_allocating = 0  # ticks since its view first showed a server whose users hold resources
        self._members: frozenset[int] = frozenset()
        self._fixed: frozenset[int] = frozenset()  # the neighbour set it froze
        self._homed = False  # it had users when it froze

    def on_tick(self, server: Server, now: float) -> None:
        if not self.frozen:
            self._ticks += 1
            members = server.gradient.members()
            if members == self._members:
                self._stable += 1
            else:
                self._members, self._stable = members, 0
            if self._since_allocating or _allocating(server.gradient.view):
                self._since_allocating += 1
            if self._stable < self.freeze_after and self._since_allocating <= self.freeze_after \
                    and self._ticks < self.warmup_cap:
                return
            self.frozen = True
            server.fix_neighbors([d[1] for d in server.gradient.view], now)
            self._fixed, self._homed = frozenset(server.neighbors), bool(server.homes)
            self.start(server)
            server.emit(NeighborsFixed(now, server.id, tuple(server.neighbors)))
        super().on_tick(server, now)

    def on_peer_down(self, server: Server, peer: int) -> None:
        super().on_peer_down(server, peer)
        if self.frozen and peer in self._fixed:
            self._thaw(server)

    def on_utility(self, server: Server, now: float) -> None:
        super().on_utility(server, now)
        if self.frozen and not self._homed and server.homes:
            self._thaw(server)  # it adopted a user: its place in the gradient moved up

    def _thaw(self, server: Server) -> None:
        self.frozen = False
        server.idle_tick = False  # its next ticks watch the view again
        self.thaws += 1
        self._ticks = self._stable = self._since_allocating = 0
        self._members = frozenset()
        server.thaw_neighbors()

    def counters(self) -> dict[str, int]:
        return {"frozen_servers": int(self.frozen), "thaws": self.thaws}


DDRF_RANDOM = ProtocolSpec("ddrf-random", "DDRF over P fixed random neighbours", Gateway.HOME, server_rule=DdrfRule)
DDRF_GRADIENT = ProtocolSpec("ddrf-gradient", "DDRF over each server's gradient view, frozen once it settles",
                             Gateway.HOME, server_rule=DdrfGradientRule, gradient=GradientUse.FROZEN)
