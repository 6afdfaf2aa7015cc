"""The gradient's preference, selection, freshness and centre logic, without an event loop."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import drfemu.overlay.gradient as gradient_module
from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.overlay.gradient import (
    NEG_INF,
    RANK_IMPLEMENTATION,
    Gradient,
    acknowledges,
    freshest,
    is_above,
    lowest_neighbour,
    rank,
    rank_c,
    rank_python,
    validation_set,
)
from drfemu.overlay.messages import GradientReply, GradientShuffle
from tests.oracles.preference import select_best

INF = float("inf")


def test_eq_3_9_above_beats_below_and_closer_wins() -> None:
    # Node 0 has utility 0.5. Above it: 0.6 (node 1), 0.9 (node 2); below: 0.4 (3), 0.1 (4).
    candidates = {1: 0.6, 2: 0.9, 3: 0.4, 4: 0.1}
    assert select_best(0, 0.5, candidates, 1) == [1]  # closest above
    assert select_best(0, 0.5, candidates, 2) == [1, 2]  # any above beats any below
    assert select_best(0, 0.5, candidates, 3) == [1, 2, 3]  # then the closest below
    assert select_best(0, 0.5, candidates, 9) == [1, 2, 3, 4]


def test_the_top_node_takes_the_next_ones_below() -> None:
    # Eq. 3.10–3.11: the highest-utility node sees only lower neighbours: its view is the top-P.
    assert select_best(7, 1.0, {1: 0.2, 2: 0.9, 3: 0.5, 4: 0.8}, 2) == [2, 4]


def test_ties_break_by_node_id_in_the_total_order() -> None:
    assert is_above(0.0, 5, 0.0, 3)  # equal utility: the higher id is above
    assert not is_above(0.0, 2, 0.0, 3)
    # Four nodes with utility 0: node 3's closest above is 4, its closest below is 2.
    assert select_best(3, 0.0, {1: 0.0, 2: 0.0, 4: 0.0, 5: 0.0}, 2) == [4, 5]
    assert select_best(5, 0.0, {1: 0.0, 2: 0.0, 4: 0.0}, 2) == [4, 2]


def test_minus_infinity_utilities_eq_4_2() -> None:
    # Servers without users (−∞) rank below every server with users, and among themselves by id.
    candidates = {1: NEG_INF, 2: -0.3, 3: NEG_INF, 4: -0.1}
    assert select_best(0, -0.2, candidates, 4) == [4, 2, 3, 1]
    assert select_best(2, NEG_INF, {1: NEG_INF, 3: NEG_INF, 4: -0.1}, 2) == [3, 4]


def test_validation_of_the_centre_thesis_3_3_1() -> None:
    # Converged: centre 9 has view {8, 7, 6}; its lowest neighbour 6 has view {9, 8, 7}.
    centre_view = [(0.8, 8, 1.0), (0.7, 7, 1.0), (0.6, 6, 1.0)]
    assert lowest_neighbour(centre_view) == 6
    partner, proposed = validation_set(9, centre_view)
    assert (partner, proposed) == (6, frozenset({9, 8, 7}))
    assert acknowledges([(0.9, 9, 1.0), (0.8, 8, 1.0), (0.7, 7, 1.0)], proposed)
    assert not acknowledges([(0.9, 9, 1.0), (0.8, 8, 1.0), (0.5, 5, 1.0)], proposed)


needs_c = pytest.mark.skipif(rank_c is None, reason=f"drfemu.overlay._rank: {SKIP_REASON}")
RANKS = [pytest.param(rank_python, id="python"), pytest.param(rank_c, id="C", marks=needs_c)]


def test_rank_is_the_merge_protocols_compiled_chooses() -> None:
    """`rank` is the C merge exactly when `kernel.compiled` loads `src/native/_rank.c` (the README
    install builds it where there is a compiler); otherwise the reference, with the same answers."""
    loaded = compiled_module("drfemu.overlay._rank")
    assert (rank is rank_python) == (loaded is None)
    assert RANK_IMPLEMENTATION == ("Python" if loaded is None else "C")


@pytest.mark.parametrize("rank", RANKS)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 4)), max_size=200),
       st.integers(0, 32), st.sampled_from([NEG_INF, -1.0, -0.5, 0.0, 0.25]), st.integers(1, 12),
       st.integers(0, 2**32), st.sampled_from([NEG_INF, 0.0, 2.0]))
def test_rank_equals_the_reference_preference(rank: Any, pairs: list[tuple[int, int]], me: int, mine: float,
                                             size: int, seed: int, oldest: float) -> None:
    """`rank` (sorts) = `select_best` (definition) applied to each node's freshest descriptor."""
    draw = random.Random(seed)
    utility_of: dict[tuple[int, int], float] = {}
    candidates = []
    for node, stamp in pairs:
        u = utility_of.setdefault((node, stamp), draw.choice([NEG_INF, -1.0, -0.5, 0.0, 0.25, draw.random()]))
        candidates.append((u, node, float(stamp)))
    freshest: dict[int, tuple[float, float]] = {}
    for u, node, stamp in candidates:
        if stamp >= oldest and (node not in freshest or stamp >= freshest[node][0]):
            freshest[node] = (stamp, u)
    expected = select_best(me, mine, {n: v[1] for n, v in freshest.items()}, size)
    got = rank(me, mine, list(candidates), size, oldest)
    assert [d[1] for d in got] == expected
    assert all(d[2] == freshest[d[1]][0] for d in got)


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(-1.0, 1.0), st.integers(0, 400), st.integers(0, 3)), max_size=400),
       st.integers(0, 400), st.floats(-1.0, 1.0), st.integers(1, 150))
def test_the_c_merge_equals_the_python_one_on_large_views(triples: list[tuple[float, int, int]], me: int,
                                                          mine: float, size: int) -> None:
    """Views past the C merge's on-stack buffers (64 kept per side) give the reference's list."""
    candidates = [(u, node, float(stamp)) for u, node, stamp in triples]
    assert rank_c(me, mine, list(candidates), size) == rank_python(me, mine, list(candidates), size)


def gradient(me: int, utility: float, size: int = 3) -> Gradient:
    return Gradient(me, size, random.Random(me), utility)


def test_fresher_descriptors_replace_older_ones() -> None:
    g = gradient(0, 0.0)
    g.offer([(0.5, 1, 1.0), (0.6, 2, 1.0)])
    g.offer([(0.1, 1, 3.0), (0.9, 1, 2.0)])  # the stamp decides, not the arrival order
    assert g.view == [(0.1, 1, 3.0), (0.6, 2, 1.0)]


def test_merge_is_lazy_and_peek_changes_nothing() -> None:
    g = gradient(0, 0.0, size=2)
    g.offer([(0.5, 1, 1.0), (0.6, 2, 1.0), (0.7, 3, 1.0)])
    assert [d[1] for d in g.peek()] == [1, 2]
    assert g._view == [] and len(g._pending) == 3
    assert [d[1] for d in g.view] == [1, 2]
    assert g._pending == []


def test_a_utility_change_reranks_the_view() -> None:
    g = gradient(0, 0.0, size=2)
    g.offer([(-0.5, 1, 1.0), (0.5, 2, 1.0), (0.6, 3, 1.0)])
    assert [d[1] for d in g.view] == [2, 3]
    g.set_utility(0.55)
    g.offer([(-0.5, 1, 1.0)])
    assert [d[1] for d in g.view] == [3, 2]


def test_believes_centre_eq_3_11() -> None:
    top = gradient(5, 0.9)
    top.offer([(0.1, 1, 1.0), (0.5, 2, 1.0)])
    assert top.believes_centre()
    other = gradient(2, 0.5)
    other.offer([(0.9, 5, 1.0), (0.1, 1, 1.0)])
    assert not other.believes_centre()
    # Beliefs use the utilities as last heard: a stale descriptor can mislead.
    stale = gradient(1, 0.1)
    stale.offer([(0.05, 2, 0.0)])
    assert stale.believes_centre()


def test_exchange_sends_the_view_plus_itself_and_merges_both_ways() -> None:
    a, b = gradient(1, 0.1), gradient(2, 0.2)
    a.offer([(0.2, 2, 0.0), (0.3, 3, 0.0)])
    b.offer([(0.4, 4, 0.0)])
    assert b.view == [(0.4, 4, 0.0)]
    partner, request = a.initiate(now=1.0)  # type: ignore[misc]
    assert partner in (2, 3)
    assert request.descriptors[0] == (0.1, 1, 1.0) and len(request.descriptors) == 3
    reply = b.answer(GradientShuffle(request.descriptors), now=1.001)
    assert reply.descriptors[0] == (0.2, 2, 1.001)
    assert {d[1] for d in b.view} == {3, 4, 1}  # b merged what a sent (itself excluded)
    a.complete(GradientReply(reply.descriptors))
    assert {d[1] for d in a.view} == {2, 3, 4}
    assert a.view[0] == (0.2, 2, 1.001)  # the fresher descriptor of 2


def test_a_reply_carries_the_view_as_last_merged() -> None:
    # Like T-Man's passive thread: answer first, merge what arrived at the next read.
    b = gradient(2, 0.2)
    b.offer([(0.4, 4, 0.0)])
    reply = b.answer(GradientShuffle(((0.1, 1, 1.0),)), now=1.0)
    assert reply.descriptors == ((0.2, 2, 1.0),)
    assert {d[1] for d in b.view} == {1, 4}


def test_no_neighbour_no_exchange() -> None:
    assert gradient(0, 0.0).initiate(1.0) is None


def test_infinite_values_do_not_break_the_order() -> None:
    g = gradient(3, NEG_INF, size=2)
    g.offer([(NEG_INF, 1, 0.0), (-INF, 2, 0.0), (NEG_INF, 4, 0.0), (-0.2, 5, 0.0)])
    assert [d[1] for d in g.view] == [4, 5]


# -- compacting what waits for a merge (issue 40) --------------------------------------------------

class SmallCompactions(Gradient):
    """A gradient that compacts its pending candidates after a few, so that a test sees many."""

    __slots__ = ()
    COMPACT_AT = 3


plain_descriptors = st.lists(st.tuples(st.sampled_from([-1.0, -0.5, 0.0, 0.25, NEG_INF]), st.integers(0, 6),
                                       st.sampled_from([0.0, 1.0, 2.0, 3.0])), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(plain_descriptors, max_size=8), plain_descriptors, st.sampled_from([INF, 1.5, 2.5]),
       st.sampled_from([-0.5, 0.1]))
def test_compacting_the_pending_candidates_changes_no_merge(offers: list[list[tuple[float, int, float]]],
                                                           view: list[tuple[float, int, float]], max_age: float,
                                                           utility: float) -> None:
    """Each node's freshest descriptor (at equal stamps the later) is all a merge takes of the
    pending candidates, so a gradient that compacts them merges to the same view, the same
    descriptors to the bit, as the full list would, stale ones and ties with the view included.
    (The same descriptor objects where the gradient keeps lists; where it keeps C arrays,
    `overlay._rank.Descriptors`, Python reads tuples rebuilt from the values.)"""
    g = SmallCompactions(3, 2, random.Random(1), utility, max_age)
    g._clock = 3.0
    g._view = rank_python(3, utility, list(view), 2)  # a view is what a merge made
    view = list(g._view)
    everything: list[tuple[float, int, float]] = []
    for batch in offers:
        g.offer(batch)
        everything += batch
    kept = 7  # at most one per node after a compaction, then at most half as many again, or COMPACT_AT
    assert len(g._pending) <= kept + max(SmallCompactions.COMPACT_AT, kept // 2)
    expected = rank_python(3, utility, everything + list(view), 2, 3.0 - max_age)
    g._stale = True  # merge even if nothing was offered
    merged = g.view
    assert merged == expected and repr(merged) == repr(expected)
    if type(g._view) is list:
        assert all(a is b for a, b in zip(merged, expected))


def test_a_gradient_offered_more_nodes_than_compact_at_compacts_rarely(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct nodes than `COMPACT_AT` pending: a compaction cannot shrink the list below
    them, and the next one waits until it has grown by half of that (at least `COMPACT_AT`), so
    compacting costs O(1) per candidate (it ran at every offer, O(pending) each, once the list
    stayed above `COMPACT_AT`: here about 23,000 times instead of 16)."""
    calls: list[int] = []

    def counted(candidates: list[Any]) -> Any:
        calls.append(len(candidates))
        return freshest(candidates)

    monkeypatch.setattr(gradient_module, "freshest", counted)
    g = Gradient(0, 2, random.Random(1))
    nodes = 3 * Gradient.COMPACT_AT
    everything: list[tuple[float, int, float]] = []
    for stamp in range(8):
        for first in range(0, nodes, 4):
            batch = [(node / nodes, node, float(stamp)) for node in range(first, first + 4)]
            g.offer(batch)
            everything += batch
    assert 1 <= len(calls) <= len(everything) // Gradient.COMPACT_AT + 1  # COMPACT_AT new ones between two
    assert sum(calls) <= 3 * len(everything)  # each compaction reads at most 3× what arrived since the last
    assert len(g._pending) <= nodes + nodes // 2
    assert g.view == rank_python(0, NEG_INF, everything, 2, -INF)


def test_candidates_that_are_not_plain_descriptors_are_never_compacted() -> None:
    g = SmallCompactions(0, 2, random.Random(1))
    odd = [(0.5, 1, float("nan")), (0.5, 1, 1.0), (0.5, 1, 2.0), (0.25, 2, 1.0)]
    g.offer(odd)
    assert g._pending == odd
