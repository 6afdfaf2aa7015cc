"""`OverlayPeer`: an actor that runs Cyclon and the gradient overlay.

The allocation protocols' resource nodes subclass it and set the utility
(`gradient.set_utility`); on its own, with a static utility, it is the node of the
overlay-only emulation (`assembly.overlay_run`). Its choices come from the
random stream it is given — its own (`kernel.streams.NodeStreams`), so no other node's
draws move them. The runtime calls `cyclon_round` and
`gradient_round` from periodic drivers. With `rejoin_via` set (a run with faults), a node
whose Cyclon view emptied — in Cyclon an initiator drops the partner it shuffles with, so a
node cut off by a partition loses one entry a round until none is left, and nobody else still
names it — asks the bootstrap service for peers again each round until it has some. A node
cut off by a partition that does not empty its view ends up, as the rest do, with a view of
its own side only, and Cyclon alone never joins the two sides again; in a run with faults a
node therefore remembers the peers that left a shuffle of its unanswered and shuffles with
one of them every `reconnect_every` rounds (`healing_cyclon_round`). The entries of every Cyclon request and reply the
node receives — uniformly random peers, and the requester's own fresh descriptor — are
offered to the gradient as candidates (Kompics' Croupier publishes its samples to the
gradient the same way). Measured against offering the whole Cyclon view once a round, this
converges faster (P = 2, 1,000 nodes: ideal-view fraction 0.70–0.74 after 50 rounds instead
of 0.57–0.64) at the same cost.

The rounds and the four overlay handlers run as C methods (`src/native/_plane.c`) where the
extension was built: on the plane's arrays for a peer the run's overlay plane adopted
(`nodes.plane`), as the Python methods below for any other. The Python methods are their reference
(`PYTHON_EXCHANGES`), and tests hold the two to the same state changes, draws and messages.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.messages import collect_handlers, handles
from drfemu.kernel.streams import NodeStreams
from drfemu.nodes.actor import Actor
from drfemu.overlay import cyclon as cyclon_module
from drfemu.overlay.cyclon import Cyclon
from drfemu.overlay.gradient import NEG_INF, Gradient
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle, JoinReply, JoinRequest

__all__ = ["EXCHANGE_IMPLEMENTATION", "LANE_MARKS", "OVERLAY_MESSAGES", "PYTHON_EXCHANGES", "LaneMark", "OverlayPeer",
           "bootstrap", "random_neighbors"]


class OverlayPeer(Actor):
    """Node `actor_id` with a Cyclon view of `cyclon_view` and a gradient view of `view_size`."""

    __slots__ = ("lane", "cyclon", "gradient", "_cyclon_exchanges", "_gradient_exchanges", "gossip_gradient", "feeds_gradient",
                 "rejoin_via", "idle_cyclon_every", "idle_gradient_every", "_idle_rounds", "unanswered",
                 "reconnect_every", "_cyclon_rounds")

    def __init__(
        self,
        actor_id: int,
        view_size: int,
        cyclon_view: int,
        shuffle_length: int,
        rng: random.Random,
        utility: float = NEG_INF,
        max_age: float = float("inf"),
        gradient: Callable[..., Any] = Gradient,
    ) -> None:
        """`gradient` makes the gradient view, called as `Gradient` is (`overlay.gradient.Gradient`,
        the T-Man variant, or `overlay.kompics_gradient.KompicsGradient` with its options bound)."""
        super().__init__(actor_id)
        self.lane: Any = None  # the run's overlay plane, which may hold this peer's state (`nodes.plane`)
        self.cyclon = Cyclon(actor_id, cyclon_view, shuffle_length, rng)
        self.gradient = gradient(actor_id, view_size, rng, utility, max_age)
        self._cyclon_exchanges = 0  # the shuffles and exchanges it started, less those a plane counts (see below)
        self._gradient_exchanges = 0
        self.gossip_gradient = True  # False: answer gradient exchanges but start none
        # False: Cyclon's samples are not offered to the gradient. For a node whose gradient nothing
        # reads (protocols on fixed random neighbours): unread, the offers were kept for ever.
        self.feeds_gradient = True
        self.rejoin_via = -1  # the bootstrap service to ask when the Cyclon view empties (-1: none)
        self.idle_cyclon_every = 1  # see `sparse_cyclon_round`
        self.idle_gradient_every = 1  # see `sparse_gradient_round`
        self._idle_rounds = [0, 0]  # Cyclon's and the gradient's rounds since this node became idle
        self.unanswered: dict[int, None] = {}  # peers that left a shuffle unanswered, longest first
        self.reconnect_every = 0  # see `healing_cyclon_round`
        self._cyclon_rounds = 0  # rounds of `healing_cyclon_round`

    @property
    def cyclon_exchanges(self) -> int:
        """The Cyclon shuffles this node started (those its overlay plane counted while it held the node too)."""
        return self._cyclon_exchanges + (self.lane.exchanges(self)[0] if self.lane is not None else 0)

    @property
    def gradient_exchanges(self) -> int:
        """The gradient exchanges this node started (as `cyclon_exchanges`)."""
        return self._gradient_exchanges + (self.lane.exchanges(self)[1] if self.lane is not None else 0)

    def join(self, entries: Sequence[tuple[float, int, float]]) -> None:
        """Start from the bootstrap service's Cyclon view, offered to the gradient too."""
        self.cyclon.bootstrap(entries)
        if self.feeds_gradient:
            self.gradient.offer(self.cyclon.samples())

    def cyclon_round(self, now: float) -> None:
        started = self.cyclon.initiate(self.gradient.descriptor(now))
        if started is not None:
            self.outbox.append(started)
            self._cyclon_exchanges += 1
        elif self.rejoin_via >= 0:
            self.outbox.append((self.rejoin_via, JoinRequest(self.id, self.cyclon.size)))

    def healing_cyclon_round(self, now: float) -> None:
        """`sparse_cyclon_round`, except that a partner that has not answered by the next round
        (lost, crashed or across a partition) is remembered, and every `reconnect_every`-th round
        the node shuffles with the peer remembered longest instead, forgetting it until it fails
        to answer again (Serf's reconnection to failed members, on Cyclon's shuffle). A peer the
        failure detector reports crashed is forgotten (`forget_peer`). Runs with faults use it
        (`--reconnect-every`); it is what joins the two sides of a healed partition, whose views
        by then name only their own side. Decision: the longest remembered, not a random one,
        so the node cycles through all of them and draws nothing."""
        partner = self.cyclon.pending()
        if partner >= 0:
            self.unanswered[partner] = None
        self._cyclon_rounds += 1
        if self.unanswered and self.reconnect_every and self._cyclon_rounds % self.reconnect_every == 0:
            suspect = next(iter(self.unanswered))
            del self.unanswered[suspect]
            self.outbox.append(self.cyclon.reach(suspect, self.gradient.descriptor(now)))
            self._cyclon_exchanges += 1
        else:
            self.sparse_cyclon_round(now)

    def forget_peer(self, peer: int) -> None:
        """The failure detector reports `peer` crashed: drop it from both views and from the
        peers to reconnect to."""
        self.cyclon.forget(peer)
        self.gradient.forget(peer)
        self.unanswered.pop(peer, None)

    def sparse_cyclon_round(self, now: float) -> None:
        """`cyclon_round`, except that while this node is idle — no users to allocate for, its
        utility −∞ — it starts a shuffle only on every `idle_cyclon_every`-th round (the first
        idle round, then every k-th; an idle node still answers every shuffle it is sent). The
        run option `--idle-cyclon-every` (default 1: every round, as the thesis) puts these rounds
        in place of the plain ones. It changes what nodes do: `docs/performance.md` measures how."""
        if self._idle_turn(0, self.idle_cyclon_every):
            self.cyclon_round(now)

    def sparse_gradient_round(self, now: float) -> None:
        """`gradient_round`, thinned as `sparse_cyclon_round` thins Cyclon's, every
        `idle_gradient_every`-th round (`--idle-gradient-every`)."""
        if self._idle_turn(1, self.idle_gradient_every):
            self.gradient_round(now)

    def _idle_turn(self, which: int, every: int) -> bool:
        rounds = self._idle_rounds
        if self.gradient.utility != NEG_INF:
            rounds[which] = 0
            return True
        due = rounds[which] % every == 0
        rounds[which] += 1
        return due

    @handles(JoinReply)
    def _on_join_reply(self, msg: JoinReply, now: float) -> None:
        """The bootstrap service named live peers (described as of now, utility unknown)."""
        self.join([(NEG_INF, p, now) for p in msg.peers])

    def gradient_round(self, now: float) -> None:
        if not self.gossip_gradient:
            return
        started = self.gradient.initiate(now)
        if started is not None:
            self.outbox.append(started)
            self._gradient_exchanges += 1

    @handles(CyclonShuffle)
    def _on_cyclon_shuffle(self, msg: CyclonShuffle, now: float) -> None:
        self.outbox.append((msg.sender, self.cyclon.answer(msg)))
        if self.feeds_gradient:
            self.gradient.offer(msg.entries)

    @handles(CyclonReply)
    def _on_cyclon_reply(self, msg: CyclonReply, now: float) -> None:
        self.cyclon.complete(msg)
        if self.feeds_gradient:
            self.gradient.offer(msg.entries)

    @handles(GradientShuffle)
    def _on_gradient_shuffle(self, msg: GradientShuffle, now: float) -> None:
        self.outbox.append((msg.sender, self.gradient.answer(msg, now)))

    @handles(GradientReply)
    def _on_gradient_reply(self, msg: GradientReply, now: float) -> None:
        self.gradient.complete(msg)


PYTHON_EXCHANGES: dict[str, Callable[..., None]] = {name: vars(OverlayPeer)[name] for name in (
    "cyclon_round", "gradient_round", "_on_cyclon_shuffle", "_on_cyclon_reply", "_on_gradient_shuffle",
    "_on_gradient_reply")}
"""The overlay rounds and handlers in Python: the reference for `src/native/_plane.c`."""


class LaneMark:
    """What a list of sends holds for an overlay message carried as a row of the lane
    (`src/native/_plane.c`): one object per message type, of a class of its own so that
    dispatch, tallies and traces tell them apart; `STANDS_FOR` is that type."""

    __slots__ = ()
    STANDS_FOR: ClassVar[type]

    def __repr__(self) -> str:
        return f"<row: {self.STANDS_FOR.__name__}>"


class CyclonShuffleMark(LaneMark):
    __slots__ = ()
    STANDS_FOR = CyclonShuffle


class CyclonReplyMark(LaneMark):
    __slots__ = ()
    STANDS_FOR = CyclonReply


class GradientShuffleMark(LaneMark):
    __slots__ = ()
    STANDS_FOR = GradientShuffle


class GradientReplyMark(LaneMark):
    __slots__ = ()
    STANDS_FOR = GradientReply


LANE_MARKS: tuple[LaneMark, ...] = (CyclonShuffleMark(), CyclonReplyMark(), GradientShuffleMark(), GradientReplyMark())
"""The marks, in the lane's order of kinds."""


OVERLAY_MESSAGES: tuple[type, ...] = (CyclonShuffle, CyclonReply, GradientShuffle, GradientReply)
"""The overlay's messages, in the order of the plane's kinds (`LANE_MARKS`)."""


def _compile_exchanges() -> str:
    """Put the C versions of the overlay rounds and handlers (`src/native/_plane.c`) in
    `OverlayPeer`, where the extension was built; returns which implementation runs. They run on the
    arrays of the plane that adopted a peer (`nodes.plane`), and as the Python reference for any
    other peer."""
    plane = compiled_module("drfemu.nodes._plane")
    if plane is None:
        return "Python"
    view_type = getattr(cyclon_module, "View", None)  # a peer's entries read as a View (else a dict)
    methods = plane.peer_methods(OverlayPeer, (*OVERLAY_MESSAGES, JoinRequest), PYTHON_EXCHANGES, view_type,
                                 Gradient.COMPACT_AT)
    for name, method in methods.items():
        setattr(OverlayPeer, name, method)
    compiled = {message_type: methods[name] for name, function in PYTHON_EXCHANGES.items()
                for message_type in getattr(function, "__handles__", ())}
    OverlayPeer.COMPILED_HANDLERS = compiled | {type(mark): methods["_on_row"] for mark in LANE_MARKS}
    OverlayPeer.DISPATCH = collect_handlers(OverlayPeer)
    return "C"


EXCHANGE_IMPLEMENTATION = _compile_exchanges()


def bootstrap(peers: Sequence[OverlayPeer], utilities: Sequence[float], seed: int) -> None:
    """The bootstrap service: each peer (ids 0..n−1) joins with a Cyclon view of `c` distinct
    random other peers, described as of time 0, drawn from a stream of its own
    (`(seed, peer id, "bootstrap")`), so adding a peer never changes another's start."""
    n = len(peers)
    for peer in peers:
        rng = NodeStreams(seed, peer.id).python("bootstrap")
        picks = rng.sample(range(n - 1), min(peer.cyclon.size, n - 1))
        peer.join([(utilities[p + (p >= peer.id)], p + (p >= peer.id), 0.0) for p in picks])


def random_neighbors(n: int, degree: int, seed: int) -> list[list[int]]:
    """A fixed random graph: each of nodes 0..n−1 gets `degree` distinct random others,
    drawn from its own stream `(seed, node, "neighbors")`."""
    return [[p + (p >= node) for p in NodeStreams(seed, node).python("neighbors").sample(range(n - 1),
                                                                                          min(degree, n - 1))]
            for node in range(n)]
