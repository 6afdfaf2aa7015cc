"""`overlay._rank.Descriptors`, the gradient's descriptors as C arrays (issue 57): a list of its
descriptor tuples to Python, on any input — plain ones kept as C data, anything else kept as the
objects themselves — and `rank` and `freshest` on a store are their references on the list."""

from __future__ import annotations

import math
import pickle
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.kernel.compiled import compiled_module
from drfemu.overlay.gradient import NEG_INF, Gradient, descriptors, freshest_python, rank_python
from tests.test_accelerators_hostile import World, hostile_candidates, make, mostly_plain, mostly_plain_ints, needs

_rank = compiled_module("drfemu.overlay._rank")
pytestmark = needs(_rank, "overlay._rank")

batches = st.lists(st.tuples(st.sampled_from(["tuple", "list", "iterator", "raising", "store"]),
                             st.lists(st.tuples(mostly_plain, mostly_plain_ints, mostly_plain), max_size=6)),
                   max_size=4)


def result(call: Any, *args: Any) -> tuple[Any, ...]:
    """What a call did, a store read as the list of its items: ("value", repr) or ("raised", type, message)."""
    try:
        value = call(*args)
    except Exception as error:  # noqa: BLE001 - the point is to compare any exception
        return ("raised", type(error), str(error))
    if _rank is not None and isinstance(value, _rank.Descriptors):
        value = list(value)
    return ("value", type(value).__name__ if value is not None else None, repr(value))


def raising(items: list[Any]) -> Iterator[Any]:
    """The items, then an error: list.extend keeps what it took before the error, and so must a store."""
    yield from items
    raise ValueError("the iterable ends in an error")


def container(shape: str, items: list[Any], world: World) -> Any:
    if shape == "store":
        return _rank.Descriptors(items)  # type: ignore[union-attr]
    return {"tuple": tuple, "list": world.hold, "iterator": iter, "raising": raising}[shape](items)


@settings(max_examples=400, deadline=None)
@given(batches, mostly_plain_ints, mostly_plain, st.integers(0, 4), st.one_of(st.none(), mostly_plain))
def test_a_store_behaves_as_the_list_of_its_descriptors(batches: list[tuple[str, list[Any]]], me: Any, utility: Any,
                                                       size: int, oldest: Any) -> None:
    runs = []
    for store_type, rank, freshest in ((_rank.Descriptors, _rank.rank, _rank.freshest),  # type: ignore[union-attr]
                                       (list, rank_python, freshest_python)):
        world = World()
        store = store_type()
        seen: list[Any] = []
        for shape, batch in batches:
            values = container(shape, hostile_candidates(batch, "tuple", world), world)
            seen.append(result(store.extend, values))
            seen.append((repr(store), len(store), store == list(store), bool(store)))
        seen.append(result(lambda held: [held[i] for i in range(-len(held), len(held))], store))
        seen.append(result(lambda held: held[1:3], store))
        args = [make_value(me, world), make_value(utility, world), store_type(store), size]
        if oldest is not None:
            args.append(make_value(oldest, world))
        seen.append(result(rank, *args))
        seen.append(result(freshest, store_type(store)))
        seen.append(repr(store))
        runs.append(seen)
    assert runs[0] == runs[1]


def make_value(drawn: tuple[str, float], world: World) -> Any:
    return make(*drawn, world)


def test_plain_descriptors_stay_c_data_until_one_is_not() -> None:
    store = _rank.Descriptors([(0.5, 1, 2.0), (-math.inf, 2, 0.0)])  # type: ignore[union-attr]
    assert store.plain and store == [(0.5, 1, 2.0), (-math.inf, 2, 0.0)] and isinstance(store, Sequence)
    store += [(-0.0, 3, 1.0)]
    assert store.plain and repr(store[2]) == "(-0.0, 3, 1.0)"  # the bits of every value are kept
    store.extend(store)
    assert len(store) == 6 and store[3:] == store[:3]
    store.extend([(1, 4, 0.0)])  # an int utility: not plain, kept as it is
    assert not store.plain and store[-1] == (1, 4, 0.0) and type(store[-1][0]) is int
    assert pickle.loads(pickle.dumps(store)) == store
    with pytest.raises(TypeError, match="unhashable"):
        hash(store)
    with pytest.raises(IndexError, match="list index out of range"):
        store[7]
    with pytest.raises(TypeError, match="not iterable"):
        store.extend(5)  # type: ignore[arg-type]
    assert store + [(0.1, 9, 0.0)] == [*store, (0.1, 9, 0.0)]
    with pytest.raises(TypeError, match="can only concatenate list"):
        store + ((0.1, 9, 0.0),)  # type: ignore[operator]
    assert store != tuple(store) and _rank.Descriptors() == []  # type: ignore[union-attr]


def test_a_gradient_keeps_its_descriptors_in_stores_and_merges_as_its_reference() -> None:
    """Where the extension is built the gradient's view and pending candidates are stores, and what
    it merges to is what the reference rank makes of the same candidates."""
    g = Gradient(0, 3, random.Random(1), 0.25)
    assert descriptors is _rank.Descriptors and type(g._view) is type(g._pending) is descriptors  # type: ignore[union-attr]
    offered = [(u / 10, node, float(stamp)) for stamp in range(3) for node, u in enumerate(range(-4, 5), start=1)]
    g.offer(offered[:10])
    g.offer(tuple(offered[10:]))
    assert g.view == rank_python(0, 0.25, list(offered), 3, NEG_INF)
    assert type(g._view) is type(g._pending) is descriptors and not g._pending


def test_a_view_whose_entries_arrived_as_c_data_reads_as_the_dict_of_their_tuples() -> None:
    """A peer the overlay plane holds merges a shuffle that arrived as a row into its arrays, and its
    Cyclon's `entries` is a View of C data (no descriptor object until Python reads one): every way
    Python reads it makes the tuples, equal to those sent."""
    from drfemu.nodes import overlay_peer
    from drfemu.nodes.network import Network
    from drfemu.nodes.plane import attach_plane
    from drfemu.nodes.runtime import Runtime
    from drfemu.overlay.cyclon import frontier_hop, frontier_hop_python

    peers = [overlay_peer.OverlayPeer(i, 3, 6, 3, random.Random(i), utility=i / 10) for i in range(12)]
    overlay_peer.bootstrap(peers, [i / 10 for i in range(12)], seed=1)
    runtime = Runtime(Network(), peers)
    assert attach_plane(runtime) and runtime._lane is not None
    peers[0].cyclon_round(1.0)
    sends = peers[0].take_outbox()
    (dst, mark), = sends
    (_, shuffle), = runtime._lane.render(sends)
    receiver = peers[dst]
    before = dict(receiver.cyclon.entries.items())
    for node in before:  # room for all of it: every entry received joins
        receiver.cyclon.forget(node)
    assert not receiver.cyclon.entries
    receiver._on_row(mark, 1.0)  # type: ignore[attr-defined]
    entries = receiver.cyclon.entries
    expected = {d[1]: d for d in shuffle.entries if d[1] != dst}
    assert expected and before and dict(entries.items()) == expected and entries == expected
    assert list(entries) == list(expected) and list(entries.values()) == list(expected.values())
    assert repr(entries) == f"View({expected!r})"
    first = next(iter(expected))
    assert entries.get(first) == expected[first] and entries[first] == expected[first] and first in entries
    assert frontier_hop((), (), entries, random.Random(3)) == frontier_hop_python((), (), entries, random.Random(3))
    assert entries.pop(first) == expected[first] and first not in entries
    assert pickle.loads(pickle.dumps(dict(entries.items()))) == {k: v for k, v in expected.items() if k != first}
