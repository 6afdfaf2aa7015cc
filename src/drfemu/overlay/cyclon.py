"""Cyclon peer sampling (Voulgaris, Gavidia & van Steen 2005), as pure state.

A node keeps a view of at most `size` (c) descriptors of other nodes. Each period the node
(the initiator P):

1. picks its oldest neighbour Q and `length − 1` (ℓ − 1) other random entries;
2. drops Q from its view and sends Q the chosen entries plus a fresh descriptor of itself;
3. merges Q's reply (at most ℓ entries) by the rule below, replacing what it sent.

Q answers with up to ℓ random entries of its own view, then merges what it received the
same way. **Merge rule** (the paper's): entries that name the merging node or a node
already in the view are discarded; a new entry fills an empty slot if there is one, else
replaces one of the entries this node sent in the exchange, and is dropped when none is
left.

Decisions the paper leaves open or that the emulator changes:
- **Age is the descriptor's stamp.** Cyclon counts an entry's age in its holder's shuffles
  since the owner created it. Every node here shuffles on the same period, so that count is
  `(now − stamp) / period` and the oldest entry is simply the one with the smallest stamp;
  comparing stamps of different owners assumes synchronised clocks, which the emulator has
  (a deployment without them would count shuffles). Entries are then plain descriptors
  `(utility, node, stamp)` — the gradient's candidates, as Croupier hands its samples to
  Kompics' gradient — and nothing is aged or re-packed per shuffle.
- Among equally old entries the one held longest (view order) is the oldest.
- Only the latest exchange is remembered: a reply that arrives after the node started
  another exchange (a slow or lost message) can only fill empty slots.

`initiate`, `answer` and `complete` are run in C by the overlay plane (`src/native/_plane.c`,
`nodes.plane`) on the arrays of the peers it holds; a change here must be made there too — the
property tests in `tests/test_plane.py` fail until it is.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, MutableMapping, Sequence
from functools import cache
from itertools import combinations
from math import comb
from operator import itemgetter
from typing import Any, TypeVar

from drfemu.kernel.compiled import compiled_module
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, Descriptor

__all__ = ["ARRAY_VIEW_MAX", "Cyclon", "frontier_hop", "frontier_hop_python", "merge", "merge_python", "new_view",
           "pop_oldest", "pop_oldest_python", "sample", "sample_python", "sample_values", "sample_values_python"]

STAMP = itemgetter(2)
T = TypeVar("T")

_MAX_TABLE = 4096


@cache
def _subset_table(n: int, k: int) -> list[itemgetter[Any]] | None:
    """One `itemgetter` per k-subset of range(n) (None when there are too many)."""
    if comb(n, k) > _MAX_TABLE:
        return None
    return [itemgetter(*subset) for subset in combinations(range(n), k)]


def sample_python(draw: random.Random, items: Sequence[T], k: int) -> tuple[T, ...]:
    """`k` distinct random elements of `items` (all of them if there are no more than `k`).

    Every k-subset is equally likely. For the small views of peer sampling one uniform draw
    picks a precomputed subset (≈0.25 µs, against ≈1 µs for a partial Fisher–Yates, which
    is used when there are more than 4096 subsets).
    """
    n = len(items)
    if n <= k:
        return tuple(items)
    if k == 0:
        return ()
    if k == 1:
        return (items[int(draw.random() * n)],)
    table = _subset_table(n, k)
    if table is not None:
        return table[int(draw.random() * len(table))](items)  # type: ignore[no-any-return]
    pool = list(items)
    uniform = draw.random
    for i in range(k):
        j = i + int(uniform() * (n - i))
        pool[i], pool[j] = pool[j], pool[i]
    return tuple(pool[:k])


def sample_values_python(draw: random.Random, entries: MutableMapping[int, Descriptor],
                         k: int) -> tuple[Descriptor, ...]:
    """`sample(draw, list(entries.values()), k)`: `k` random entries of a view. The reference for
    `src/native/_cyclon.c`'s `sample_values`, which draws the same subset without building the list."""
    return sample_python(draw, list(entries.values()), k)


def pop_oldest_python(entries: MutableMapping[int, Descriptor]) -> int | None:
    """Remove the view's oldest entry — the smallest stamp; of equal ones, the one held longest —
    and return its node (None when the view is empty). The reference for `src/native/_cyclon.c`."""
    if not entries:
        return None
    oldest: int = min(entries.values(), key=STAMP)[1]
    del entries[oldest]
    return oldest


def frontier_hop_python(visited: tuple[int, ...], frontier: tuple[int, ...], peers: Iterable[int],
                        draw: random.Random) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """A placement walk's hop over the Cyclon graph (`protocols.walks`): the walk's `frontier` grown by
    the nodes of `peers` (a Cyclon view, in its order) it has neither `visited` nor queued; None
    when that is empty, else a uniformly random node of it, `(it, visited with it, the grown
    frontier without it)`. The reference for `src/native/_cyclon.c`'s `frontier_hop`, which reads
    the nodes of a `View` where the Python iterates them."""
    known = set(visited)
    known.update(frontier)
    grown = frontier + tuple(node for node in peers if node not in known)
    if not grown:
        return None
    k = int(draw.random() * len(grown))
    nxt = grown[k]
    return nxt, visited + (nxt,), grown[:k] + grown[k + 1:]


ARRAY_VIEW_MAX = 64
"""The largest Cyclon view kept as C arrays (`overlay._cyclon.View`); a larger one is a dict.

The array view finds a node by scanning, so it stays within a few cache lines only for small
views; the thesis's `c` is 10 (`--cyclon-view`, at most 10,000)."""

_COMPILED = compiled_module("drfemu.overlay._cyclon") is not None
sample = sample_python  # no hot path draws from a plain sequence: not compiled
if _COMPILED:  # typed by its stub, `_cyclon.pyi`
    from drfemu.overlay._cyclon import View, frontier_hop, pop_oldest, sample_values
else:
    sample_values, pop_oldest, frontier_hop = sample_values_python, pop_oldest_python, frontier_hop_python


def new_view(size: int) -> MutableMapping[int, Descriptor]:
    """An empty Cyclon view for at most `size` entries: a `View` (C arrays) where the extension
    is built and `size` is at most `ARRAY_VIEW_MAX`, else a dict. Both keep the same entries in
    the same order under the same operations, so runs do not depend on which."""
    if _COMPILED and size <= ARRAY_VIEW_MAX:
        return View(size)
    return {}


class Cyclon:
    """The Cyclon view of node `me`: `size` entries at most, shuffles of `length` entries."""

    __slots__ = ("me", "size", "length", "rng", "entries", "_partner", "_sent")

    def __init__(self, me: int, size: int, length: int, rng: random.Random) -> None:
        if size < 1:
            raise ValueError("the Cyclon view size c must be at least 1")
        if not 1 <= length <= size:
            raise ValueError("the Cyclon shuffle length ℓ must be between 1 and the view size c")
        self.me = me
        self.size = size
        self.length = length
        self.rng = rng
        self.entries = new_view(size)  # node -> freshest descriptor heard
        self._partner = -1
        self._sent: Sequence[Descriptor] = ()  # a tuple; a store of structs where the C exchanges ran on the arrays

    # -- reading --------------------------------------------------------------------------
    def neighbors(self) -> list[int]:
        """The nodes in the view, in view order."""
        return list(self.entries)

    def samples(self) -> list[Descriptor]:
        """The view's descriptors: random candidates for the gradient."""
        return list(self.entries.values())

    # -- set-up ---------------------------------------------------------------------------
    def bootstrap(self, descriptors: Iterable[Descriptor]) -> None:
        """Fill the view from a bootstrap service (`me` and repeats are skipped)."""
        entries = self.entries
        for descriptor in descriptors:
            if len(entries) >= self.size:
                break
            node = descriptor[1]
            if node != self.me and node not in entries:
                entries[node] = descriptor

    def forget(self, node: int) -> None:
        """Drop `node` from the view (a failure detector says it crashed)."""
        self.entries.pop(node, None)
        if self._partner == node:
            self._partner, self._sent = -1, ()

    # -- the exchange ---------------------------------------------------------------------
    def initiate(self, own: Descriptor) -> tuple[int, CyclonShuffle] | None:
        """Start a shuffle carrying `own` (this node's fresh descriptor): returns
        `(partner, request)`, or None with an empty view."""
        oldest = pop_oldest(self.entries)
        if oldest is None:
            return None
        chosen = sample_values(self.rng, self.entries, self.length - 1)
        self._partner = oldest
        self._sent = chosen
        return oldest, CyclonShuffle((own, *chosen))

    def reach(self, node: int, own: Descriptor) -> tuple[int, CyclonShuffle]:
        """Start a shuffle with `node`, which need not be in the view (a peer that once left a
        shuffle unanswered): as `initiate`, but nothing leaves the view for the partner."""
        chosen = sample_values(self.rng, self.entries, self.length - 1)
        self._partner = node
        self._sent = chosen
        return node, CyclonShuffle((own, *chosen))

    def pending(self) -> int:
        """The partner of the latest shuffle this node started, if it has not answered (else −1)."""
        return self._partner

    def answer(self, request: CyclonShuffle) -> CyclonReply:
        """Reply to a shuffle with up to ℓ random entries, then merge the request."""
        chosen = sample_values(self.rng, self.entries, self.length)
        self._merge(request.entries, chosen)
        return CyclonReply(self.me, chosen)

    def complete(self, reply: CyclonReply) -> None:
        """Merge the partner's reply, replacing the entries sent to it."""
        if reply.sender == self._partner:
            replaceable, self._sent, self._partner = self._sent, (), -1
        else:
            replaceable = ()
        self._merge(reply.entries, replaceable)

    def _merge(self, received: Sequence[Descriptor], replaceable: Sequence[Descriptor]) -> None:
        merge(self.entries, self.me, self.size, received, replaceable)


def merge_python(entries: MutableMapping[int, Descriptor], me: int, size: int, received: Sequence[Descriptor],
                 replaceable: Sequence[Descriptor]) -> None:
    """The merge rule, on the view `entries` in place: descriptors of `received` naming neither
    `me` nor a node in the view fill its free slots, then replace the `replaceable` entries
    still in it, in order; those left over are dropped. The reference for `src/native/_cyclon.c`."""
    new = [d for d in received if d[1] not in entries and d[1] != me]
    if not new:
        return
    room = size - len(entries)
    if len(new) > room:
        for sent in replaceable:  # replace in the order the entries were sent
            victim = sent[1]
            if victim in entries:
                del entries[victim]
                room += 1
                if room == len(new):
                    break
        del new[room:]
    for descriptor in new:
        entries[descriptor[1]] = descriptor


if _COMPILED:
    from drfemu.overlay._cyclon import merge
else:
    merge = merge_python
