"""The overlay plane (issue 57): every overlay peer's Cyclon and gradient state in C arrays, and their
messages as rows.

A distributed run's messages are 99 % Cyclon shuffles, gradient exchanges and their replies, four a
server a tick. Where the extension is built, `attach_plane` gives the run one `Plane`
(`src/native/_plane.c`) and *adopts* each peer it can hold: the peer's Cyclon view, partner and
entries sent, and its gradient's view, pending candidates, utility, clock and staleness move into
the plane's arrays, and `peer.cyclon` and `peer.gradient` become `PlaneCyclon` and `PlaneGradient`,
views of the plane with the interface of `overlay.cyclon.Cyclon` and `overlay.gradient.Gradient`
(what a rule, the server and the observers read). The peer's rounds and handlers (the C methods of
`OverlayPeer`) then run on the arrays, and while the network's latency is fixed its overlay
messages travel as the plane's rows (`nodes.lane`), so an exchange builds no Python object.

The reference is the Python objects: a run without the extension (or with `DRFEMU_PURE_PYTHON`)
keeps `Cyclon` and `Gradient` objects and message objects, and gives the same events. A peer stays
in the plane only while its state is plain (descriptors that are exact 3-tuples of a float, an int
of 64 bits and a float, no NaN; the stock generator as its stream; sizes and maximum age those of
the plane). Anything else — a descriptor that is not plain offered or received, a direct call of an
exchange step, a new stream — *evicts* it first (`evict`): its state goes back into `Cyclon` and
`Gradient` objects, which its views forward to from then on, and the step runs as the reference.
So any input gets the reference's answer.

Decisions:
- `PlaneCyclon.entries` is a copy (a `View` of the entries as they are), since the plane's view is
  not a Python mapping; changing it changes nothing. Code that meant to change a peer's view calls
  the view's own operations (`bootstrap`, `forget`).
- `PlaneGradient.view` is a list kept until the view changes: read it, do not change it.
- A view's sizes and name (`me`, `size`, `length`, `max_age`) are the plane's: setting one evicts
  the peer, whose objects then take the value, as the reference's would.
- A descriptor read back from the plane is a tuple equal to the one offered, bit for bit, not the
  same object (as a `Descriptors` store's, `overlay.gradient`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from drfemu.kernel.compiled import compiled_module
from drfemu.nodes.actor import Actor
from drfemu.nodes.overlay_peer import LANE_MARKS, OVERLAY_MESSAGES, OverlayPeer
from drfemu.nodes.runtime import Runtime
from drfemu.overlay.cyclon import Cyclon
from drfemu.overlay.gradient import NODE, Gradient, acknowledges, descriptors, validation_set
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, Descriptor, GradientReply, GradientShuffle

if TYPE_CHECKING:
    from drfemu.nodes._plane import Plane

__all__ = ["PLANE_IMPLEMENTATION", "PlaneCyclon", "PlaneGradient", "adopt", "attach_plane", "evict"]

_plane = compiled_module("drfemu.nodes._plane")
PLANE_IMPLEMENTATION = "C" if _plane is not None and OverlayPeer.COMPILED_HANDLERS else "none"
"""Whether runs hold their peers' overlay state in a plane (`C`) or in Python objects (`none`)."""

T = TypeVar("T")


class _Held(Generic[T]):
    """A size or name of a plane's view (`me`, `size`, `length`, `max_age`): the value it was adopted
    with while the plane holds the peer, the reference object's once it is evicted. Setting one hands
    the peer to the reference first (the plane's sizes are the plane's), which then takes the value.
    A view's own calls into the plane, made only while it holds the peer, pass `_me` itself."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, "_" + name

    def __get__(self, view: Any, owner: type | None = None) -> T:
        ref = view._ref
        return getattr(view, self.slot) if ref is None else getattr(ref, self.name)  # type: ignore[no-any-return]

    def __set__(self, view: Any, value: T) -> None:
        setattr(view._evicted(), self.name, value)


class PlaneCyclon:
    """The Cyclon view of a peer whose overlay state a plane holds: `overlay.cyclon.Cyclon`'s
    interface on the plane's arrays; once the peer is evicted, the `Cyclon` object's."""

    __slots__ = ("_plane", "_peer", "_me", "_size", "_length", "_rng", "_ref")
    me, size, length = _Held[int](), _Held[int](), _Held[int]()

    def __init__(self, plane: Plane, peer: OverlayPeer, size: int, length: int, rng: random.Random) -> None:
        self._plane = plane
        self._peer = peer
        self._me, self._size, self._length = peer.id, size, length
        self._rng = rng
        self._ref: Cyclon | None = None  # the reference object, once evicted

    def _evicted(self) -> Cyclon:
        if self._ref is None:
            evict(self._peer)
        assert self._ref is not None
        return self._ref

    @property
    def rng(self) -> random.Random:
        return self._rng if self._ref is None else self._ref.rng

    @rng.setter
    def rng(self, rng: random.Random) -> None:
        self._evicted().rng = rng

    @property
    def entries(self) -> MutableMapping[int, Descriptor]:
        """node -> freshest descriptor: a copy of the view (`View`), or the reference's own mapping."""
        return self._plane.entries(self._me) if self._ref is None else self._ref.entries

    @property
    def _partner(self) -> int:
        return self._plane.partner(self._me) if self._ref is None else self._ref._partner  # noqa: SLF001

    @property
    def _sent(self) -> Sequence[Descriptor]:
        return self._plane.state(self._me)[2] if self._ref is None else self._ref._sent  # noqa: SLF001

    def neighbors(self) -> list[int]:
        return self._plane.nodes(self._me) if self._ref is None else self._ref.neighbors()

    def samples(self) -> list[Descriptor]:
        return self._plane.samples(self._me) if self._ref is None else self._ref.samples()

    def bootstrap(self, descriptors: Iterable[Descriptor]) -> None:
        if self._ref is not None or not self._plane.bootstrap(self._me, descriptors):
            self._evicted().bootstrap(descriptors)

    def forget(self, node: int) -> None:
        if self._ref is not None or not self._plane.forget(self._me, node, 1):
            self._evicted().forget(node)

    def pending(self) -> int:
        return self._partner

    def reach(self, node: int, own: Descriptor) -> tuple[int, CyclonShuffle]:
        started = None if self._ref is not None else self._plane.reach(self._me, node, own)
        return started if started is not None else self._evicted().reach(node, own)

    # The exchange's steps called on their own (not through the peer's rounds and handlers): the reference's.
    def initiate(self, own: Descriptor) -> tuple[int, CyclonShuffle] | None:
        return self._evicted().initiate(own)

    def answer(self, request: CyclonShuffle) -> CyclonReply:
        return self._evicted().answer(request)

    def complete(self, reply: CyclonReply) -> None:
        self._evicted().complete(reply)


class PlaneGradient:
    """The gradient view of a peer whose overlay state a plane holds: `overlay.gradient.Gradient`'s
    interface on the plane's arrays; once the peer is evicted, the `Gradient` object's."""

    __slots__ = ("_plane", "_peer", "_me", "_size", "_max_age", "_rng", "_ref", "_utility")
    me, size, max_age = _Held[int](), _Held[int](), _Held[float]()

    COMPACT_AT: ClassVar[int] = Gradient.COMPACT_AT

    def __init__(self, plane: Plane, peer: OverlayPeer, size: int, max_age: float, rng: random.Random) -> None:
        self._plane = plane
        self._peer = peer
        self._me, self._size, self._max_age = peer.id, size, max_age
        self._rng = rng
        self._ref: Gradient | None = None
        self._utility = plane.utility(peer.id)  # the plane's, kept here too: only this view changes it

    def _evicted(self) -> Gradient:
        if self._ref is None:
            evict(self._peer)
        assert self._ref is not None
        return self._ref

    @property
    def rng(self) -> random.Random:
        return self._rng if self._ref is None else self._ref.rng

    @rng.setter
    def rng(self, rng: random.Random) -> None:
        self._evicted().rng = rng

    @property
    def utility(self) -> float:
        return self._utility if self._ref is None else self._ref.utility

    @utility.setter
    def utility(self, utility: float) -> None:
        if self._ref is None and self._plane.set_utility(self._me, utility, False):
            self._utility = utility
        else:
            self._evicted().utility = utility

    def set_utility(self, utility: float) -> None:
        if self._ref is None and self._plane.set_utility(self._me, utility, True):
            if utility != self._utility:  # as the plane does (-0.0 stays for 0.0)
                self._utility = utility
        else:
            self._evicted().set_utility(utility)

    def offer(self, descriptors: Iterable[Descriptor]) -> None:
        if self._ref is not None or not self._plane.offer(self._me, descriptors):
            self._evicted().offer(descriptors)

    def forget(self, node: int) -> None:
        if self._ref is not None or not self._plane.forget(self._me, node, 2):
            self._evicted().forget(node)

    @property
    def view(self) -> Sequence[Descriptor]:
        """The current view, most preferred first; merges pending input."""
        return self._plane.view(self._me) if self._ref is None else self._ref.view

    def believes_centre(self, strict: bool = False) -> bool:
        if self._ref is not None:
            return self._ref.believes_centre(strict)
        return self._plane.believes(self._me, strict)

    def members(self) -> frozenset[int]:
        return frozenset(map(NODE, self.view))

    def validation_set(self) -> tuple[int, frozenset[int]]:
        return validation_set(self.me, self.view)

    def acknowledges(self, proposed: frozenset[int]) -> bool:
        return acknowledges(self.view, proposed)

    def peek(self) -> list[Descriptor]:
        return self._plane.peek(self._me) if self._ref is None else self._ref.peek()

    def descriptor(self, now: float) -> Descriptor:
        own = None if self._ref is not None else self._plane.descriptor(self._me, now)
        return own if own is not None else self._evicted().descriptor(now)

    @property
    def _own(self) -> Descriptor:
        if self._ref is not None:
            return self._ref._own  # noqa: SLF001
        state = self._plane.state(self._me)
        return (state[9], self._me, state[10])

    # The state as the reference keeps it, for reading (tests compare it).
    @property
    def _view(self) -> Sequence[Descriptor]:
        return list(self._plane.state(self._me)[5]) if self._ref is None else self._ref._view  # noqa: SLF001

    @property
    def _pending(self) -> Sequence[Descriptor]:
        return list(self._plane.state(self._me)[6]) if self._ref is None else self._ref._pending  # noqa: SLF001

    @property
    def _clock(self) -> float:
        return self._plane.state(self._me)[4] if self._ref is None else self._ref._clock

    @property
    def _stale(self) -> bool:
        return self._plane.state(self._me)[7] if self._ref is None else self._ref._stale

    # The exchange's steps called on their own (not through the peer's rounds and handlers): the reference's.
    def initiate(self, now: float) -> tuple[int, GradientShuffle] | None:
        return self._evicted().initiate(now)

    def answer(self, request: GradientShuffle, now: float) -> GradientReply:
        return self._evicted().answer(request, now)

    def complete(self, reply: GradientReply) -> None:
        self._evicted().complete(reply)


def adopt(plane: Plane, peer: OverlayPeer) -> bool:
    """Move `peer`'s overlay state into `plane` (its `lane` must be the plane), if the plane can hold
    it: a `Cyclon` and a `Gradient` of exactly those classes, of the plane's sizes and maximum age,
    sharing one stream, every value plain. Returns whether it did; a peer it did not adopt keeps its
    objects (its marks, if any reach it, become messages)."""
    held = plane.holder(peer.id)
    if held is not None and held is not peer:  # a restarted node in a crashed one's place: the old keeps its state
        evict(held)
    c, g = peer.cyclon, peer.gradient
    size, length, view_size, max_age = plane.sizes
    if (type(c) is not Cyclon or type(g) is not Gradient or c.rng is not g.rng or c.me != peer.id or g.me != peer.id
            or (c.size, c.length, g.size) != (size, length, view_size) or type(g.max_age) is not float
            or g.max_age != max_age or any(type(node) is not int or type(d) is not tuple or len(d) != 3
                                           or d[1] != node for node, d in c.entries.items())):
        return False
    if not plane.adopt(peer, c.rng, tuple(c.entries.values()), c._partner, tuple(c._sent), g.utility,  # noqa: SLF001
                       g._clock, tuple(g._view), tuple(g._pending), g._stale, g._compact_next, g._own):  # noqa: SLF001
        return False
    peer.cyclon = PlaneCyclon(plane, peer, size, length, c.rng)  # type: ignore[assignment]
    peer.gradient = PlaneGradient(plane, peer, view_size, max_age, g.rng)
    return True


def evict(peer: OverlayPeer) -> None:
    """The plane lets `peer` go: its state as the `Cyclon` and `Gradient` objects it would be in had it
    never been adopted, which its views forward to from now on."""
    cyclon, gradient = peer.cyclon, peer.gradient
    assert isinstance(cyclon, PlaneCyclon) and isinstance(gradient, PlaneGradient)
    counted = cyclon._plane.exchanges(peer)  # noqa: SLF001
    peer._cyclon_exchanges += counted[0]  # noqa: SLF001
    peer._gradient_exchanges += counted[1]  # noqa: SLF001
    (entries, partner, sent, utility, clock, view, pending, stale, compact_next, own_utility,
     own_stamp) = cyclon._plane.release(peer.id)  # noqa: SLF001
    c = Cyclon(peer.id, cyclon.size, cyclon.length, cyclon.rng)
    for descriptor in entries:
        c.entries[descriptor[1]] = descriptor
    c._partner, c._sent = partner, sent  # noqa: SLF001
    g = Gradient(peer.id, gradient.size, gradient.rng, utility, gradient.max_age)
    g._clock, g._stale, g._compact_next = clock, stale, compact_next  # noqa: SLF001
    g._own = (own_utility, peer.id, own_stamp)  # noqa: SLF001  # the descriptor it made last, reused while it matches
    g._view, g._pending = descriptors(view), descriptors(pending)  # noqa: SLF001
    cyclon._ref, gradient._ref = c, g  # noqa: SLF001
    peer.cyclon, peer.gradient = c, g


def attach_plane(runtime: Runtime) -> bool:
    """Hold the overlay state of `runtime`'s peers in one plane and carry their messages as its rows
    while the network's latency is fixed (`Runtime.use_lane`); returns whether it did.

    Decision (issue 57): only where the result is the same by construction — the extension is built,
    the runtime moves messages through its emulated network (not a live run's datagrams), the peers'
    classes dispatch the overlay messages to the compiled handlers, and at least one peer can be
    adopted (`adopt`: a Kompics gradient, say, cannot). A run without the extension keeps objects:
    they are the plane's reference, and the tests run both and compare every event."""
    if PLANE_IMPLEMENTATION != "C" or not runtime.moves_messages_itself():
        return False
    assert _plane is not None
    peers = [actor for actor in runtime.actors if isinstance(actor, OverlayPeer)]
    compiled = OverlayPeer.COMPILED_HANDLERS
    if any(type(peer).DISPATCH.get(cls) is not compiled[cls] for peer in peers for cls in OVERLAY_MESSAGES):
        return False
    first = next((p for p in peers if type(p.cyclon) is Cyclon and type(p.gradient) is Gradient), None)
    if first is None or type(first.gradient.max_age) is not float:
        return False
    plane: Plane = _plane.Plane(len(runtime.actors), LANE_MARKS, first.cyclon.size, first.cyclon.length,
                                first.gradient.size, first.gradient.max_age, evict)

    def join(actor: Actor) -> None:
        if isinstance(actor, OverlayPeer):
            actor.lane = plane
            adopt(plane, actor)

    for peer in peers:
        join(peer)
    if not plane.adopted:
        for peer in peers:
            peer.lane = None
        return False
    kinds = {mark.STANDS_FOR: kind for kind, mark in enumerate(LANE_MARKS)}

    def carried(cls: type) -> int:
        return plane.carried[kinds[cls]]

    runtime.use_lane(plane, {type(mark): mark.STANDS_FOR for mark in LANE_MARKS}, carried, join)
    return True
