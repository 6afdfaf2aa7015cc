"""Cyclon and the gradient, cycle-driven: PeerSim's cycle-driven semantics over plain arrays.

The overlay study's second engine (`drfemu overlay --mode cycle`), for sizes the event-driven
one cannot hold (a million nodes: no Python object per node or per message). It runs the same
two protocols as `overlay.cyclon` and `overlay.gradient`, under the semantics of PeerSim's
cycle-driven simulator rather than of an emulated network:

- **Cycles, not messages.** Time is a cycle count. In each cycle every node, in an order drawn
  afresh for the cycle, takes its turn: one Cyclon shuffle, then its gradient exchanges of the
  cycle. An exchange is atomic: the partner answers and both sides merge at once, so there is
  no latency, no loss and no reply that crosses another exchange.
- **Cyclon** as in `overlay.cyclon`: the initiator drops its oldest entry (smallest stamp, of
  equal ones the one held longest) and sends it `ℓ − 1` random entries and its own fresh
  descriptor; the partner answers with `ℓ` random entries of its own; both merge by the paper's
  rule (`overlay.cyclon.merge_python` itself), the partner replacing what it answered with,
  the initiator what it sent. The entries each side receives are offered to its gradient, as an
  overlay peer does.
- **The gradient** as in `overlay.gradient` (T-Man style): the initiator picks a uniformly
  random neighbour from its view and sends its whole view with its own fresh descriptor; the
  partner answers with its own descriptor and its view; each keeps the `P` most preferred of
  what it holds and hears (`overlay.gradient.rank_python` itself: the freshest descriptor of
  each node, none older than `max_age` cycles).
- **Reads at the start of a cycle.** The event-driven peer queues what it hears and merges it
  when it next reads its view — every node at the tick, when it starts its exchange — and
  answers with its view as last read. Here every node reads its view at the start of the
  cycle (the `answer_*` arrays: what it picks its partner from, sends and answers with during
  the cycle), and what it hears is ranked into its view at once, to be read at the next cycle.
  The `P` most preferred of a union are the `P` most preferred of the `P` most preferred of a
  part and the rest, so the view read is the one a lazy merge would give (but for a stale copy
  that outranks a fresher one of the same node after a utility change, or a descriptor that
  expires between hearing and reading). Measured (2,000 nodes, P = 10, 20 cycles, seeds 1–3,
  ideal-view fraction): reading at each node's own turn instead gave 0.80–0.84, answering with
  the current view 0.73–0.77, reading at the start of the cycle 0.88–0.91; the event-driven
  overlay 0.84–0.90.
- **Gradient exchanges per cycle** follow the event-driven timing: the `g`-th exchange of a
  node falls in the cycle that contains `g · tick / shuffles_per_tick` (integer microseconds),
  so `shuffles_per_tick` 0.5 is one exchange every other cycle and 2 is two a cycle.
- **One random stream** for the run (a SplitMix64 generator seeded from the run's seed and the
  stream name `overlay/cycle`), as PeerSim has one; the bootstrap draws from it too: every node
  starts with `c` distinct random others, described as of cycle 0, offered to its gradient.

Descriptors are `(utility, node, stamp)` triples held in three parallel arrays per view (the
Cyclon view, the gradient view, and the gradient view as the node read it at the start of the
cycle);
stamps are cycle numbers. Views are rows of `width` slots; a view's first `length[u]` slots
hold it in view order (the gradient's most preferred first) and the rest are −1.

This module is the reference: `src/native/_cycle.c` does the same, draw for draw, in C, where it
was built; it checks its input first and hands anything it does not accept to `run_cycles`
here, which gives Python's answer or exception. Tests hold the two to identical arrays. Both
engines share the merge and the rank: here the event-driven overlay's references themselves,
in C the overlay kernel (`src/native/_overlay_kernel.h`) that the event-driven overlay's
accelerators use too, so each rule is written once in Python and once in C.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from drfemu.kernel.compiled import compiled_module
from drfemu.overlay.cyclon import merge_python
from drfemu.overlay.gradient import rank_python

__all__ = ["COUNTERS", "CYCLE_IMPLEMENTATION", "CycleOverlay", "SplitMix64", "bootstrap", "bootstrap_python", "run_cycles",
           "run_cycles_python"]

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
UNIT = 2.0**-53
NO_NODE = -1
COUNTERS = ("cyclon_exchanges", "gradient_exchanges", "cyclon_shuffle_entries", "cyclon_reply_entries",
            "gradient_shuffle_entries", "gradient_reply_entries")
"""What `CycleOverlay.counters` counts, in order: exchanges, and the descriptors each kind of
message would carry (the cost model's bytes derive from them)."""


class SplitMix64:
    """SplitMix64 (Steele, Lea & Flood 2014): 64 bits of state, one multiply-xorshift per draw.
    `state` is a one-element uint64 array, shared with the C engine, which advances it in place."""

    __slots__ = ("state",)

    def __init__(self, state: np.ndarray) -> None:
        self.state = state

    def next(self) -> int:
        s = (int(self.state[0]) + GOLDEN) & MASK
        self.state[0] = s
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in [0, n): the top 53 bits as a float in [0, 1), times `n`, truncated."""
        return int((self.next() >> 11) * UNIT * n)


@dataclass(eq=False)
class CycleOverlay:
    """The whole overlay's state: `n` nodes, Cyclon views of `cyclon_view` (c) entries with
    shuffles of `shuffle_length` (ℓ), gradient views of `view_size` (P), descriptors expiring
    after `max_age` cycles. Built empty; `bootstrap` fills the views."""

    n: int
    cyclon_view: int
    shuffle_length: int
    view_size: int
    max_age: float
    seed_word: int
    utility: np.ndarray = field(init=False)
    cyclon_node: np.ndarray = field(init=False)
    cyclon_utility: np.ndarray = field(init=False)
    cyclon_stamp: np.ndarray = field(init=False)
    cyclon_length: np.ndarray = field(init=False)
    gradient_node: np.ndarray = field(init=False)
    gradient_utility: np.ndarray = field(init=False)
    gradient_stamp: np.ndarray = field(init=False)
    gradient_length: np.ndarray = field(init=False)
    answer_node: np.ndarray = field(init=False)
    answer_utility: np.ndarray = field(init=False)
    answer_stamp: np.ndarray = field(init=False)
    answer_length: np.ndarray = field(init=False)
    rng: np.ndarray = field(init=False)
    counters: np.ndarray = field(init=False)
    order: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n, c, p = self.n, self.cyclon_view, self.view_size
        if n < 2 or not 1 <= c < n or not 1 <= p < n or not 1 <= self.shuffle_length <= c:
            raise ValueError("a cycle-driven overlay needs 1 <= P, c < n and 1 <= shuffle length <= c")
        self.utility = np.zeros(n)
        self.cyclon_node = np.full((n, c), NO_NODE, dtype=np.int32)
        self.cyclon_utility = np.zeros((n, c))
        self.cyclon_stamp = np.zeros((n, c))
        self.cyclon_length = np.zeros(n, dtype=np.int32)
        self.gradient_node = np.full((n, p), NO_NODE, dtype=np.int32)
        self.gradient_utility = np.zeros((n, p))
        self.gradient_stamp = np.zeros((n, p))
        self.gradient_length = np.zeros(n, dtype=np.int32)
        self.answer_node = np.full((n, p), NO_NODE, dtype=np.int32)
        self.answer_utility = np.zeros((n, p))
        self.answer_stamp = np.zeros((n, p))
        self.answer_length = np.zeros(n, dtype=np.int32)
        self.rng = np.array([self.seed_word & MASK], dtype=np.uint64)
        self.counters = np.zeros(len(COUNTERS), dtype=np.int64)
        self.order = np.arange(n, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        """Bytes of state (what a size needs, beside the observers' working arrays)."""
        return sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray))

    def counter(self, name: str) -> int:
        return int(self.counters[COUNTERS.index(name)])

    # -- views as lists (the reference works on these) -----------------------------------------
    def _cyclon(self, u: int) -> list[tuple[float, int, float]]:
        k = int(self.cyclon_length[u])
        return list(zip(self.cyclon_utility[u, :k].tolist(), self.cyclon_node[u, :k].tolist(),
                        self.cyclon_stamp[u, :k].tolist()))

    def _write_cyclon(self, u: int, entries: list[tuple[float, int, float]]) -> None:
        _write(entries, u, self.cyclon_utility, self.cyclon_node, self.cyclon_stamp, self.cyclon_length)

    def _gradient(self, u: int) -> list[tuple[float, int, float]]:
        k = int(self.gradient_length[u])
        return list(zip(self.gradient_utility[u, :k].tolist(), self.gradient_node[u, :k].tolist(),
                        self.gradient_stamp[u, :k].tolist()))

    def _answer(self, u: int) -> list[tuple[float, int, float]]:
        k = int(self.answer_length[u])
        return list(zip(self.answer_utility[u, :k].tolist(), self.answer_node[u, :k].tolist(),
                        self.answer_stamp[u, :k].tolist()))

    def _offer(self, u: int, heard: list[tuple[float, int, float]], now: float) -> None:
        """Rank what `u` heard with its view: the `P` most preferred, freshest copies, none expired."""
        view = rank_python(u, float(self.utility[u]), heard + self._gradient(u), self.view_size, now - self.max_age)
        _write(view, u, self.gradient_utility, self.gradient_node, self.gradient_stamp, self.gradient_length)


def _write(entries: list[tuple[float, int, float]], u: int, utilities: np.ndarray, nodes: np.ndarray,
           stamps: np.ndarray, lengths: np.ndarray) -> None:
    k = len(entries)
    nodes[u, :] = NO_NODE
    utilities[u, :] = 0.0
    stamps[u, :] = 0.0
    if k:
        utilities[u, :k], nodes[u, :k], stamps[u, :k] = zip(*entries)
    lengths[u] = k


def _sample(rng: SplitMix64, entries: list[tuple[float, int, float]], k: int) -> list[tuple[float, int, float]]:
    """`k` distinct random entries (all, in view order, if there are no more than `k`): a partial
    Fisher–Yates shuffle of the entries' positions."""
    n = len(entries)
    if n <= k:
        return list(entries)
    positions = list(range(n))
    for i in range(k):
        j = i + rng.below(n - i)
        positions[i], positions[j] = positions[j], positions[i]
    return [entries[p] for p in positions[:k]]


def _merge(me: int, size: int, view: list[tuple[float, int, float]], received: list[tuple[float, int, float]],
           replaceable: list[tuple[float, int, float]]) -> list[tuple[float, int, float]]:
    """Cyclon's merge rule (`overlay.cyclon.merge_python`) on a view held as a list."""
    entries = {d[1]: d for d in view}
    merge_python(entries, me, size, received, replaceable)
    return list(entries.values())


def _cyclon_turn(overlay: CycleOverlay, rng: SplitMix64, u: int, now: float) -> None:
    view = overlay._cyclon(u)  # noqa: SLF001 - the engine's own state
    if not view:
        return
    oldest = min(range(len(view)), key=lambda i: (view[i][2], i))
    partner = view.pop(oldest)[1]
    chosen = _sample(rng, view, overlay.shuffle_length - 1)
    request = [(float(overlay.utility[u]), u, now), *chosen]
    theirs = overlay._cyclon(partner)  # noqa: SLF001
    reply = _sample(rng, theirs, overlay.shuffle_length)
    overlay._write_cyclon(partner, _merge(partner, overlay.cyclon_view, theirs, request, reply))  # noqa: SLF001
    overlay._offer(partner, request, now)  # noqa: SLF001
    overlay._write_cyclon(u, _merge(u, overlay.cyclon_view, view, reply, chosen))  # noqa: SLF001
    overlay._offer(u, reply, now)  # noqa: SLF001
    counters = overlay.counters
    counters[0] += 1
    counters[2] += len(request)
    counters[3] += len(reply)


def _gradient_turn(overlay: CycleOverlay, rng: SplitMix64, u: int, now: float) -> None:
    view = overlay._answer(u)  # noqa: SLF001 - its view as read at the start of the cycle
    if not view:
        return
    partner = view[rng.below(len(view))][1]
    sent = [(float(overlay.utility[u]), u, now), *view]
    reply = [(float(overlay.utility[partner]), partner, now), *overlay._answer(partner)]  # noqa: SLF001
    overlay._offer(partner, sent, now)  # noqa: SLF001
    overlay._offer(u, reply, now)  # noqa: SLF001
    counters = overlay.counters
    counters[1] += 1
    counters[4] += len(sent)
    counters[5] += len(reply)


def bootstrap_python(overlay: CycleOverlay) -> None:
    """Every node, in id order, gets `c` distinct random others, as of cycle 0 and with their
    utilities now, in its Cyclon view, and offers them to its gradient: the reference for
    `src/native/_cycle.c`'s `bootstrap`."""
    rng, n, c = SplitMix64(overlay.rng), overlay.n, overlay.cyclon_view
    for u in range(n):
        picks: list[int] = []
        while len(picks) < c:
            other = rng.below(n - 1)
            other += other >= u
            if other not in picks:
                picks.append(other)
        entries = [(float(overlay.utility[v]), v, 0.0) for v in picks]
        overlay._write_cyclon(u, entries)  # noqa: SLF001
        overlay._offer(u, entries, 0.0)  # noqa: SLF001


def run_cycles_python(overlay: CycleOverlay, first: int, gradient_turns: list[int]) -> None:
    """Cycles `first`, `first + 1`, … (one per item of `gradient_turns`, each node's gradient
    exchanges in that cycle): the reference for `src/native/_cycle.c`'s `run_cycles`."""
    rng = SplitMix64(overlay.rng)
    order = overlay.order
    n = overlay.n
    for offset, turns in enumerate(gradient_turns):
        now = float(first + offset)
        for i in range(n - 1, 0, -1):  # Fisher–Yates, from the last position down
            j = rng.below(i + 1)
            order[i], order[j] = order[j], order[i]
        overlay.answer_node[...] = overlay.gradient_node  # every node reads its view
        overlay.answer_utility[...] = overlay.gradient_utility
        overlay.answer_stamp[...] = overlay.gradient_stamp
        overlay.answer_length[...] = overlay.gradient_length
        for u in order.tolist():
            _cyclon_turn(overlay, rng, u, now)
            for _ in range(turns):
                _gradient_turn(overlay, rng, u, now)


if compiled_module("drfemu.overlay._cycle") is not None:  # typed by its stub, `_cycle.pyi`
    from drfemu.overlay._cycle import bootstrap, run_cycles
    CYCLE_IMPLEMENTATION = "C"
else:
    bootstrap, run_cycles = bootstrap_python, run_cycles_python
    CYCLE_IMPLEMENTATION = "Python"
