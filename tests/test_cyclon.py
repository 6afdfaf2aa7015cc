"""Cyclon's exchange and merge, as pure state: no event loop."""

from __future__ import annotations

import random
from collections import Counter, deque
from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.overlay.cyclon import (
    ARRAY_VIEW_MAX,
    Cyclon,
    merge_python,
    new_view,
    pop_oldest_python,
    sample,
    sample_values_python,
)
from drfemu.overlay.messages import CyclonReply, CyclonShuffle
from tests.conftest import compiled_or_skip


def cyclon(me: int, nodes: list[int], stamps: list[float] | None = None, size: int = 5, length: int = 3,
           seed: int = 0) -> Cyclon:
    view = Cyclon(me, size, length, random.Random(seed))
    view.bootstrap([(-float(n), n, (stamps or [0.0] * len(nodes))[k]) for k, n in enumerate(nodes)])
    return view


def test_sample_is_uniform_over_subsets() -> None:
    draw = random.Random(3)
    counts = Counter(tuple(sorted(sample(draw, list(range(6)), 3))) for _ in range(20_000))
    assert set(counts) == set(combinations(range(6), 3))  # all 20 subsets occur
    assert max(counts.values()) / min(counts.values()) < 1.3  # expected 1000 each


def test_sample_edge_cases() -> None:
    draw = random.Random(1)
    assert sample(draw, [1, 2], 3) == (1, 2)
    assert len(sample(draw, list(range(40)), 20)) == 20  # Fisher–Yates beyond the subset table
    assert len(set(sample(draw, list(range(40)), 20))) == 20
    assert sample(draw, [7, 8, 9], 1)[0] in (7, 8, 9)


def test_initiate_drops_the_oldest_and_sends_itself_first() -> None:
    view = cyclon(0, [1, 2, 3, 4, 5], stamps=[3.0, 1.0, 2.0, 5.0, 4.0])
    partner, request = view.initiate((-0.5, 0, 9.0))  # type: ignore[misc]
    assert partner == 2  # stamp 1.0: the oldest
    assert 2 not in view.entries
    assert request.entries[0] == (-0.5, 0, 9.0)
    assert len(request.entries) == 3  # ℓ − 1 others plus itself
    assert {d[1] for d in request.entries[1:]} <= {1, 3, 4, 5}


def test_empty_view_starts_nothing() -> None:
    assert Cyclon(0, 5, 3, random.Random(0)).initiate((0.0, 0, 1.0)) is None


def test_answer_replaces_what_it_sent() -> None:
    q = cyclon(9, [10, 11, 12, 13, 14])
    reply = q.answer(CyclonShuffle(((0.0, 0, 5.0), (-20.0, 20, 4.0), (-21.0, 21, 4.0))))
    sent = {d[1] for d in reply.entries}
    assert len(sent) == 3 and sent <= {10, 11, 12, 13, 14}
    assert set(q.entries) == ({10, 11, 12, 13, 14} - sent) | {0, 20, 21}  # the view stays full
    assert reply.sender == 9


def test_complete_fills_empty_slot_then_replaces_sent_entries() -> None:
    p = cyclon(0, [1, 2, 3, 4, 5], stamps=[0.0, 1.0, 1.0, 1.0, 1.0])
    partner, request = p.initiate((0.0, 0, 2.0))  # type: ignore[misc]
    sent = [d[1] for d in request.entries[1:]]
    p.complete(CyclonReply(partner, ((0.0, 30, 1.5), (0.0, 31, 1.5), (0.0, 32, 1.5))))
    assert len(p.entries) == 5
    assert {30, 31, 32} <= set(p.entries)
    kept = set(p.entries) - {30, 31, 32}
    assert len(kept & set(sent)) == 0  # one slot was empty (the partner); two sent entries replaced
    assert partner not in p.entries


def test_merge_discards_self_and_known_entries() -> None:
    q = cyclon(0, [1, 2, 3, 4, 5])
    q.answer(CyclonShuffle(((-9.0, 1, 7.0), (0.0, 0, 7.0), (5.0, 2, 0.0))))
    assert 0 not in q.entries
    assert q.entries[1] == (-1.0, 1, 0.0) and q.entries[2] == (-2.0, 2, 0.0)  # as held before
    assert len(q.entries) == 5


def test_a_late_reply_only_fills_empty_slots() -> None:
    p = cyclon(0, [1, 2, 3, 4, 5], stamps=[0.0, 1.0, 1.0, 1.0, 1.0])
    first, _ = p.initiate((0.0, 0, 2.0))  # type: ignore[misc]
    p.initiate((0.0, 0, 3.0))  # a second exchange before the first reply
    before = set(p.entries)
    p.complete(CyclonReply(first, ((0.0, 40, 2.0), (0.0, 41, 2.0), (0.0, 42, 2.0))))
    assert before < set(p.entries)  # nothing replaced: only the free slots were filled
    assert len(p.entries) == 5


def test_view_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="view size"):
        Cyclon(0, 0, 1, random.Random(0))
    with pytest.raises(ValueError, match="shuffle length"):
        Cyclon(0, 4, 5, random.Random(0))


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=8, max_value=30),
       st.integers(min_value=2, max_value=6), st.integers(min_value=1, max_value=6))
def test_any_exchange_sequence_keeps_views_valid(seed: int, n: int, size: int, length: int) -> None:
    """Invariant: at most c entries, never itself, never twice — under any interleaving."""
    length = min(length, size)
    draw = random.Random(seed)
    views = [Cyclon(i, size, length, random.Random(seed + i)) for i in range(n)]
    for v in views:
        v.bootstrap([(0.0, j, 0.0) for j in draw.sample(range(n), min(n - 1, size + 1))])
    in_flight: list[tuple[int, int, object]] = []
    for step in range(300):
        if in_flight and draw.random() < 0.5:
            src, dst, msg = in_flight.pop(draw.randrange(len(in_flight)))
            if isinstance(msg, CyclonShuffle):
                in_flight.append((dst, src, views[dst].answer(msg)))
            else:
                views[dst].complete(msg)  # type: ignore[arg-type]
        else:
            node = draw.randrange(n)
            started = views[node].initiate((0.0, node, float(step)))
            if started is not None:
                in_flight.append((node, started[0], started[1]))
        for v in views:
            assert len(v.entries) <= size
            assert v.me not in v.entries
            assert all(d[1] == node for node, d in v.entries.items())


descriptors = st.lists(st.tuples(st.integers(-3, 3).map(float), st.integers(0, 12), st.integers(0, 5).map(float)),
                       max_size=14)


def compiled_cyclon() -> Any:
    return compiled_or_skip("drfemu.overlay._cyclon")


def array_view(entries: dict[int, Any], capacity: int = 0) -> Any:
    """The C view (`overlay._cyclon.View`) holding `entries`, in their order."""
    view = compiled_cyclon().View(capacity)
    for node, descriptor in entries.items():
        view[node] = descriptor
    return view


CONTAINERS = [pytest.param(dict, id="dict"), pytest.param(array_view, id="View")]


@pytest.mark.parametrize("container", CONTAINERS)
@given(view=descriptors, me=st.integers(0, 12), size=st.integers(1, 8), received=descriptors, replaceable=descriptors)
def test_the_c_merge_agrees_with_the_python_merge(container: Any, view: list, me: int, size: int, received: list,
                                                  replaceable: list) -> None:
    merge_c = compiled_cyclon().merge
    start = {d[1]: d for d in view[:size]}
    compiled, python = container(start), dict(start)
    merge_c(compiled, me, size, tuple(received), tuple(replaceable))
    merge_python(python, me, size, tuple(received), tuple(replaceable))
    assert list(compiled.items()) == list(python.items())  # the same entries, in the same view order


stamps = st.one_of(st.integers(0, 4).map(float), st.integers(0, 4), st.sampled_from([-0.0, float("nan"), 2.5]))


@pytest.mark.parametrize("container", CONTAINERS)
@given(st.lists(st.tuples(st.integers(0, 12), stamps), max_size=14))
def test_the_c_pop_oldest_agrees_with_the_python_one(container: Any, held: list[tuple[int, Any]]) -> None:
    """The smallest stamp, the first of equal ones, with floats, ints and NaN stamps mixed."""
    pop_oldest_c = compiled_cyclon().pop_oldest
    start = {node: (0.0, node, stamp) for node, stamp in held}
    compiled, python = container(start), dict(start)
    while True:
        oldest = pop_oldest_c(compiled)
        assert oldest == pop_oldest_python(python)
        assert list(compiled.items()) == list(python.items())
        if oldest is None:
            break


view_operations = st.lists(st.tuples(st.sampled_from(["set", "del", "pop", "get", "in", "getitem"]),
                                     st.one_of(st.integers(-2, 9), st.sampled_from([2**40, -2**63, 2**70, "a"])),
                                     stamps),
                           max_size=40)


@given(st.integers(0, 12), view_operations)
def test_the_array_view_behaves_as_a_dict(capacity: int, operations: list[tuple[str, Any, Any]]) -> None:
    """Any sequence of what Cyclon and its readers do to a view leaves a `View` and a dict with the
    same entries in the same order, and answers the same, errors included."""
    view, model = compiled_cyclon().View(capacity), {}

    def both(action: Any) -> Any:
        try:
            expected: Any = ("ok", action(model))
        except KeyError as error:
            expected = ("KeyError", error.args)
        try:
            got: Any = ("ok", action(view))
        except KeyError as error:
            got = ("KeyError", error.args)
        return got, expected

    for operation, node, stamp in operations:
        if operation == "set":
            if not isinstance(node, int) or node == 2**70:  # an id beyond 64 bits is refused (below)
                continue
            descriptor = (float(node), node, stamp)
            view[node] = model[node] = descriptor
        else:
            action = {"del": lambda m, n=node: m.__delitem__(n), "pop": lambda m, n=node: m.pop(n, "none"),
                      "get": lambda m, n=node: m.get(n), "in": lambda m, n=node: n in m,
                      "getitem": lambda m, n=node: m[n]}[operation]
            got, expected = both(action)
            assert got == expected
        assert len(view) == len(model) and list(view) == list(model) and view.keys() == list(model.keys())
        assert view.values() == list(model.values()) and view.items() == list(model.items())
        assert view == model and not view != model and repr(view) == f"View({model!r})"


def test_the_array_view_refuses_what_is_not_a_node_s_own_descriptor() -> None:
    view = compiled_cyclon().View()
    with pytest.raises(ValueError, match="descriptor of that node"):
        view[3] = (0.0, 4, 1.0)
    with pytest.raises(TypeError, match="descriptor is a"):
        view[3] = (0.0, 3)
    with pytest.raises(TypeError, match="node is an int of 64 bits"):
        compiled_cyclon().merge(view, 0, 5, [(0.0, "x", 1.0)], ())
    with pytest.raises(TypeError, match="node is an int of 64 bits"):
        view[2**70] = (0.0, 2**70, 1.0)
    assert len(view) == 0
    with pytest.raises(TypeError, match="unhashable"):
        hash(view)  # mutable, as a dict


def test_small_views_are_arrays_and_large_ones_dicts() -> None:
    """`new_view` picks the C arrays up to `ARRAY_VIEW_MAX` entries (where the extension is built),
    and a Cyclon larger than that exchanges as before, on a dict."""
    compiled = compiled_cyclon()
    assert isinstance(new_view(ARRAY_VIEW_MAX), compiled.View)
    assert type(new_view(ARRAY_VIEW_MAX + 1)) is dict
    assert isinstance(cyclon(0, [1, 2, 3]).entries, compiled.View)
    big = cyclon(0, list(range(1, 70)), size=ARRAY_VIEW_MAX + 10, length=5)
    assert type(big.entries) is dict and len(big.entries) == 69
    partner, request = big.initiate((0.0, 0, 1.0))
    assert partner == 1 and partner not in big.entries and len(request.entries) == 5


@given(st.integers(0, 2**32), st.integers(0, 40), st.integers(0, 12), st.lists(st.integers(0, 39), max_size=20))
def test_the_c_view_sample_draws_what_the_python_view_sample_draws(seed: int, n: int, k: int,
                                                                  dropped: list[int]) -> None:
    sample_values_c = compiled_cyclon().sample_values
    entries = {i: (float(i), i, 0.0) for i in range(n)}
    for node in dropped:  # gaps and re-insertions: view order is not node order
        if entries.pop(node, None) is not None and node % 3 == 0:
            entries[node] = (float(node), node, 1.0)
    for held in (entries, array_view(entries)):
        compiled, python = random.Random(seed), random.Random(seed)
        for _ in range(3):  # the same descriptors, in the same order, and the generators in the same state
            drawn = sample_values_c(compiled, held, k)
            expected = sample_values_python(python, entries, k)
            assert len(drawn) == len(expected) and all(a is b for a, b in zip(drawn, expected))
        assert compiled.random() == python.random()


def test_reach_shuffles_with_a_peer_outside_the_view_and_keeps_the_view() -> None:
    view = cyclon(0, [1, 2, 3, 4, 5])
    assert view.pending() == -1
    partner, request = view.reach(9, (0.0, 0, 7.0))
    assert partner == 9 and view.pending() == 9
    assert request.entries[0] == (0.0, 0, 7.0) and len(request.entries) == 3  # itself and ℓ − 1 others
    assert view.neighbors() == [1, 2, 3, 4, 5]  # nothing left the view for the partner
    view.complete(CyclonReply(9, ((-9.0, 9, 7.0), (-8.0, 8, 7.0))))
    assert view.pending() == -1 and 9 in view.neighbors() and 8 in view.neighbors()


# -- reconnecting after a partition (OverlayPeer.healing_cyclon_round), as pure state ------------


def _peers(n: int, reconnect_every: int, seed: int) -> list[Any]:
    from drfemu.nodes.overlay_peer import OverlayPeer, bootstrap
    peers = [OverlayPeer(i, 3, 5, 3, random.Random(seed * 1000 + i), utility=float(i)) for i in range(n)]
    bootstrap(peers, [float(i) for i in range(n)], seed)
    for peer in peers:
        peer.reconnect_every = reconnect_every
    return peers


def _gossip(peers: list[Any], rounds: range, island: frozenset[int]) -> None:
    """Cyclon rounds in id order; a message is delivered at once unless it crosses `island`'s edge."""
    for now in rounds:
        for peer in peers:
            peer.healing_cyclon_round(float(now))
            _deliver(peers, peer, float(now), island)


def _deliver(peers: list[Any], peer: Any, now: float, island: frozenset[int]) -> list[int]:
    """Deliver what `peer` sent and the answers to it; returns where `peer` sent."""
    sent = peer.take_outbox()
    queue = deque((peer.id, dst, msg) for dst, msg in sent)
    while queue:
        src, dst, msg = queue.popleft()
        if (src in island) != (dst in island):
            continue
        if isinstance(msg, CyclonShuffle | CyclonReply):
            peers[dst].receive(msg, now)
            queue.extend((dst, d, m) for d, m in peers[dst].take_outbox())
    return [dst for dst, _ in sent]


def _crossing_links(peers: list[Any], island: frozenset[int]) -> int:
    return sum((p.id in island) != (q in island) for p in peers for q in p.cyclon.neighbors())


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(12, 30), st.integers(2, 5))
def test_the_sides_of_a_healed_partition_rejoin_by_reconnecting(seed: int, n: int, size: int) -> None:
    """A partition long enough for both sides' views to name only their own side: without
    reconnection no link ever crosses again; with it, links cross within a few periods."""
    island = frozenset(random.Random(seed).sample(range(n), size))
    for every, rejoins in ((0, False), (5, True)):
        peers = _peers(n, every, seed)
        _gossip(peers, range(0, 60), island)
        assert _crossing_links(peers, island) == 0  # the partition split the overlay
        _gossip(peers, range(60, 60 + 3 * 5), frozenset())
        assert (_crossing_links(peers, island) > 0) is rejoins


def test_a_peer_that_answers_is_not_remembered_and_a_crashed_one_is_forgotten() -> None:
    peers = _peers(6, 3, seed=1)
    _gossip(peers, range(0, 9), frozenset())
    assert all(not p.unanswered for p in peers)
    peer = peers[0]
    partner, _ = peer.cyclon.initiate(peer.gradient.descriptor(9.0))  # a shuffle that is never answered
    peer.take_outbox()
    away = frozenset({partner})
    peer.healing_cyclon_round(10.0)  # the 10th round: no reconnection due
    assert list(peer.unanswered) == [partner] and _deliver(peers, peer, 10.0, away) != [partner]
    peer.healing_cyclon_round(11.0)
    assert _deliver(peers, peer, 11.0, away) != [partner]
    peer.healing_cyclon_round(12.0)  # the 12th: it shuffles with the peer that did not answer
    assert _deliver(peers, peer, 12.0, away) == [partner] and not peer.unanswered
    peer.healing_cyclon_round(13.0)  # which did not answer again
    assert list(peer.unanswered) == [partner]
    peer.forget_peer(partner)
    assert not peer.unanswered and partner not in peer.cyclon.neighbors()
