"""The gradient overlay (T-Man style; thesis eq. 3.9–3.11, SPEC §4.1), as pure state.

**Total order.** Utilities are made a total order by the node id: node `a` is *above* node
`b` when `(U(a), a) > (U(b), b)` — among equal utilities the higher id is above. Exactly
one node is the centre. (SPEC §4 asks for ties broken by id without fixing a direction; this
one lets the ranking below run as C-level sorts.)

**Preference** (eq. 3.9 over that total order) of node `l` between candidates: one above
`l` beats one below; on the same side the one closer to `l` in the order wins. So the ideal
view is the `P` nodes just above `l`, topped up with the nodes just below it when fewer
than `P` are above; it works unchanged for `−∞` utilities (eq. 4.2). `rank` computes it
(`rank_python`, the reference, and the overlay kernel in C; the tests hold both to the
equation, written plainly in `tests/oracles/preference.py`).

**Exchange.** Each round a node picks a partner from its view uniformly at random (the
choice the thesis describes for its Kompics runs; Kompics' softmax over preference rank
favours the closest neighbours and concentrates a region's exchanges on the same few nodes,
while uniform choice spreads them and refreshes every neighbour's descriptor about once per
`P` rounds — it meets the convergence bars, see `docs/overlay.md`). It sends its whole view
plus its own fresh descriptor (`P + 1` descriptors, eq. 4.5); the partner answers the same
way. Both keep the `P` most preferred of everything they know.

**Expiry.** Utilities change, and a node drops the fresh descriptor of a neighbour that
fell below it while stale copies that still show it high keep circulating among the nodes
it used to top — they prefer exactly those copies. So, like the `oldThreshold` of Kompics'
gradient, descriptors older than `max_age` (by their stamp, against the node's clock, which
assumes synchronised clocks as Cyclon's age does here) are dropped at every merge; a wrong
belief caused by a stale copy then ends within about `max_age`.

**Merging is lazy.** Received descriptors — exchanges, and the Cyclon samples the host
offers — are queued and merged when the view is next read by the node itself (its own
exchange, or its host asking whether it is the centre), so a node that hears several
messages between two reads ranks once. What it reads is always the best `P` of everything
it has heard; of two descriptors of one node the fresher (larger stamp) wins. A reply to
a partner carries the view as last merged, as T-Man's passive thread answers before it
merges.

**Where descriptors are kept.** The view and the pending candidates are made by `descriptors`:
a `list` here, and where the extension was built `overlay._rank.Descriptors`, the same contract
as C arrays (a sequence of descriptor tuples to Python, extended like a list), so that the
compiled merge, offers and exchanges move no Python object per descriptor. A descriptor read from
such a store is equal to the one offered, to the bit, but not the same object.

`initiate`, `answer`, `complete`, `descriptor`, `offer` and the merge are run in C by the overlay
plane (`src/native/_plane.c`, `nodes.plane`) on the arrays of the peers it holds; a change here must
be made there too — the property tests in `tests/test_plane.py` fail until it is.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, ClassVar, Union, cast

from drfemu.kernel.compiled import compiled_module
from drfemu.overlay.messages import Descriptor, GradientReply, GradientShuffle

if TYPE_CHECKING:
    from drfemu.overlay._rank import Descriptors

__all__ = [
    "NEG_INF",
    "DescriptorStore",
    "Gradient",
    "acknowledges",
    "descriptors",
    "is_above",
    "lowest_neighbour",
    "RANK_IMPLEMENTATION",
    "rank",
    "rank_python",
    "validation_set",
]

NEG_INF = float("-inf")
NODE, STAMP = itemgetter(1), itemgetter(2)


def is_above(utility: float, node: int, my_utility: float, me: int) -> bool:
    """True if `(utility, node)` is above `(my_utility, me)` in the total order."""
    return (utility, node) > (my_utility, me)


def rank_python(me: int, my_utility: float, candidates: list[Descriptor], size: int,
                oldest: float = NEG_INF) -> list[Descriptor]:
    """The `size` most preferred of `candidates` (each node's freshest descriptor; `me` excluded).

    Of two descriptors of one node the larger stamp wins, at equal stamps the later in
    `candidates`; descriptors stamped before `oldest` are ignored. `candidates` may be
    reordered. Every step is a C-level sort, search or constructor; a descriptor sorts by
    its own tuple order, which is the total order. `rank` is this function, or the same
    contract compiled (`src/native/_rank.c`) when the extension was built.
    """
    candidates.sort(key=STAMP)
    if oldest > NEG_INF:
        del candidates[: bisect_left(candidates, oldest, key=STAMP)]
    latest = dict(zip(map(NODE, candidates), candidates))  # the last, i.e. freshest, wins
    latest.pop(me, None)
    ranked = sorted(latest.values())
    cut = bisect_right(ranked, (my_utility, me))  # (u, n) sorts before every (u, n, stamp)
    view = ranked[cut : cut + size]
    if len(view) < size:
        below = ranked[max(0, cut - (size - len(view))) : cut]
        below.reverse()
        view += below
    return view


def freshest_python(candidates: list[Descriptor]) -> list[Descriptor] | None:
    """Each node's freshest descriptor (the larger stamp; at equal stamps the later), in the order
    of each node's first: all `rank` ever takes of `candidates`, whatever is added before or after
    them at equal stamps. None unless every candidate is a plain descriptor — an exact 3-tuple of
    a float utility and stamp other than NaN and an int node — since otherwise their order could
    matter. The reference for `src/native/_rank.c`'s `freshest`."""
    kept: dict[int, Descriptor] = {}
    for d in candidates:
        if (type(d) is not tuple or len(d) != 3 or type(d[0]) is not float or d[0] != d[0]
                or type(d[1]) is not int or type(d[2]) is not float or d[2] != d[2]):
            return None
        held = kept.get(d[1])
        if held is None or d[2] >= held[2]:
            kept[d[1]] = d
    return list(kept.values())


DescriptorStore = Union[list[Descriptor], "Descriptors"]
"""What a gradient keeps its view and pending candidates in: `descriptors()`, a list here, or where
the extension was built the same contract as C arrays (`overlay._rank.Descriptors`: a sequence of
descriptor tuples to Python, extended like a list, which a merge, an offer and an exchange's
message move without a Python object per descriptor)."""

rank: Callable[[int, float, DescriptorStore, int, float], DescriptorStore]
freshest: Callable[[DescriptorStore], DescriptorStore | None]
descriptors: Callable[..., DescriptorStore]
rank_c: Callable[[int, float, list[Descriptor], int, float], list[Descriptor]] | None = None
if compiled_module("drfemu.overlay._rank") is not None:  # typed by its stub, `_rank.pyi`
    from drfemu.overlay import _rank

    rank, freshest, descriptors = _rank.rank, _rank.freshest, _rank.Descriptors
    rank_c = _rank.rank
    Sequence.register(_rank.Descriptors)
    RANK_IMPLEMENTATION = "C"
else:
    rank = cast("Callable[[int, float, DescriptorStore, int, float], DescriptorStore]", rank_python)
    freshest = cast("Callable[[DescriptorStore], DescriptorStore | None]", freshest_python)
    descriptors = list
    RANK_IMPLEMENTATION = "Python"


def lowest_neighbour(view: Iterable[Descriptor]) -> int:
    """The neighbour lowest in the total order (the one a centre validates with)."""
    return min(view)[1]


def validation_set(me: int, view: Sequence[Descriptor]) -> tuple[int, frozenset[int]]:
    """Centre validation (thesis §3.3.1): `(p, (view \\ {p}) ∪ {me})`, `p` the lowest neighbour."""
    p = lowest_neighbour(view)
    return p, frozenset(d[1] for d in view if d[1] != p) | {me}


def acknowledges(view: Iterable[Descriptor], proposed: frozenset[int]) -> bool:
    """Does a node with this view confirm a centre's validation set (its view equals it)?"""
    return frozenset(map(NODE, view)) == proposed


class OwnDescriptor:
    """What both gradient views (this T-Man one and `overlay.kompics_gradient`) give of their own
    node: its descriptor as of an instant, one object per instant and utility."""

    __slots__ = ("_own",)
    me: int
    utility: float
    _own: Descriptor

    def descriptor(self, now: float) -> Descriptor:
        """This node's descriptor as of `now` (one object per instant and utility)."""
        own = self._own
        if own[2] != now or own[0] != self.utility:
            own = self._own = (self.utility, self.me, now)
        return own


class Gradient(OwnDescriptor):
    """The gradient view of node `me`: at most `size` (P) descriptors, ranked by eq. 3.9."""

    __slots__ = ("me", "size", "rng", "utility", "max_age", "_clock", "_view", "_pending", "_stale",
                 "_compact_next")

    COMPACT_AT: ClassVar[int] = 4096
    """Pending candidates held before they are first compacted (`_compact`); the overlay plane
    (`src/native/_plane.c`) reads it once, when it is configured."""

    def __init__(self, me: int, size: int, rng: random.Random, utility: float = NEG_INF,
                 max_age: float = float("inf")) -> None:
        if size < 1:
            raise ValueError("the gradient view size P must be at least 1")
        if not max_age > 0:
            raise ValueError("the gradient's maximum descriptor age must be positive")
        self.me = me
        self.size = size
        self.rng = rng
        self.utility = utility
        self.max_age = max_age  # seconds; older descriptors are dropped at merges
        self._clock = 0.0  # the latest `now` this node was given
        self._own: Descriptor = (utility, me, NEG_INF)
        self._view: DescriptorStore = descriptors()  # most preferred first
        self._pending: DescriptorStore = descriptors()
        self._stale = False
        self._compact_next = 0  # `_compact` acts once more candidates than this are pending

    # -- inputs ---------------------------------------------------------------------------
    def set_utility(self, utility: float) -> None:
        """The host's allocation protocol changed this node's utility."""
        if utility != self.utility:
            self.utility = utility
            self._stale = True

    def offer(self, descriptors: Iterable[Descriptor]) -> None:
        """Candidates to consider at the next merge (Cyclon samples, received views)."""
        self._pending.extend(descriptors)
        self._bound_pending()

    def _bound_pending(self) -> None:
        """Compact the pending candidates once there are more than `COMPACT_AT` (`_compact`)."""
        pending = self._pending
        if type(pending) is descriptors and len(pending) > self.COMPACT_AT:
            self._compact()

    def _compact(self) -> None:
        """Keep, of the pending candidates, each node's freshest descriptor (`freshest`): all a
        merge would ever take of them, so every merge gives what it would have (the view, read
        last, still wins ties). Decision (issue 40): a gradient that is not read for long —
        `ddrf-gradient`'s after its servers froze — kept every Cyclon sample it was offered,
        5.4 GiB on the trace hour. With a candidate that is not a plain descriptor pending,
        nothing is compacted (their order could then matter). Once more than `COMPACT_AT` are
        pending, every offer calls this; it acts only when the pending list has grown by half
        of what the last compaction kept (at least `COMPACT_AT`), so a gradient offered more
        distinct nodes than `COMPACT_AT` costs O(1) per candidate, not O(pending) per offer."""
        pending = self._pending
        if len(pending) <= self._compact_next:
            return
        kept = freshest(pending)
        if kept is not None:
            self._pending = pending = kept
        self._compact_next = len(pending) + max(self.COMPACT_AT, len(pending) // 2)

    def forget(self, node: int) -> None:
        """Drop every descriptor of `node` (a failure detector says it crashed)."""
        self._view = descriptors(d for d in self._view if d[1] != node)
        self._pending = descriptors(d for d in self._pending if d[1] != node)

    # -- reading --------------------------------------------------------------------------
    @property
    def view(self) -> Sequence[Descriptor]:
        """The current view, most preferred first; merges pending input."""
        if self._pending or self._stale:
            self._merge()
        return self._view


    def believes_centre(self, strict: bool = False) -> bool:
        """Eq. 3.11: no neighbour is above this node (as their descriptors say) in the total
        order; with `strict`, Algorithm 6's `ISCENTERNODE`: no neighbour's utility is strictly
        above this node's, so every node tied at the top is a centre."""
        if self._pending or self._stale:
            self._merge()
        view = self._view
        if strict:
            return not view or max(view)[0] <= self.utility
        return not view or view[0] < (self.utility, self.me)

    def members(self) -> frozenset[int]:
        """The nodes in the current view."""
        return frozenset(map(NODE, self.view))

    def validation_set(self) -> tuple[int, frozenset[int]]:
        """Centre validation (thesis §3.3.1) from this node: its lowest neighbour `p` and the set
        `p` must hold to confirm, `(view \\ {p}) ∪ {me}`. Needs a non-empty view."""
        return validation_set(self.me, self.view)

    def acknowledges(self, proposed: frozenset[int]) -> bool:
        """Would this node confirm a centre's validation set (its view equals `proposed`)?"""
        return acknowledges(self.view, proposed)

    def peek(self) -> list[Descriptor]:
        """The view the next read would produce, without merging (for observers)."""
        if not (self._pending or self._stale):
            return list(self._view)
        return list(rank(self.me, self.utility, [*self._pending, *self._view], self.size, self._clock - self.max_age))

    # -- the exchange ---------------------------------------------------------------------
    def initiate(self, now: float) -> tuple[int, GradientShuffle] | None:
        """Start an exchange with a uniformly random neighbour, or None with an empty view."""
        self._clock = now
        if self._pending or self._stale:
            self._merge()
        view = self._view
        if not view:
            return None
        partner = view[int(self.rng.random() * len(view))][1]
        return partner, GradientShuffle((self.descriptor(now), *view))

    def answer(self, request: GradientShuffle, now: float) -> GradientReply:
        """Reply with the view as last merged (like T-Man's passive thread, which answers
        before merging), then queue the request's descriptors."""
        self._clock = now
        self._pending.extend(request.descriptors)
        self._bound_pending()
        return GradientReply((self.descriptor(now), *self._view))

    def complete(self, reply: GradientReply) -> None:
        """Queue the partner's descriptors."""
        self._pending.extend(reply.descriptors)
        self._bound_pending()

    def _merge(self) -> None:
        candidates = self._pending
        candidates.extend(self._view)
        self._view = rank(self.me, self.utility, candidates, self.size, self._clock - self.max_age)
        self._pending = descriptors()
        self._stale = False
