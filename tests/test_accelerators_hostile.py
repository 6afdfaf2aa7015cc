"""Every C accelerator gives its Python reference's answer, or raises its exception, on any input
(issue 39): draws outside [0, 1) and NaN, numbers whose `__float__`, `__index__`, `__eq__` or
`__lt__` call back and change the container they sit in, subclasses of float and int, huge ints,
other containers, and repeated configuration. Each case builds two identical fresh worlds, runs
the C on one and the reference on the other, and compares the outcome (the result, as positions
of the objects it returns, or the exception's type and message) and the state left behind.

Under `.ci/sanitize` (AddressSanitizer and UndefinedBehaviorSanitizer) these are the tests
that crashed before the issue: a use-after-free or an out-of-bounds read is reported there even
where a plain build happens to survive it."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.kernel.messages import handles, message
from drfemu.nodes.actor import Actor
from drfemu.nodes.network import count_items_python, count_types_python
from drfemu.nodes.runtime import deliver_python
from drfemu.overlay import cyclon as cyclon_module
from drfemu.overlay.gradient import freshest_python, rank_python
from drfemu.protocols import probe as probe_module
from drfemu.protocols.pdgdrf import lowers_gini_python
from drfemu.protocols.probe import LowestShare, ProbeRule

_rank = compiled_module("drfemu.overlay._rank")
_cyclon = compiled_module("drfemu.overlay._cyclon")
_gini = compiled_module("drfemu.protocols._gini")
_probe = compiled_module("drfemu.protocols._probe")
_engine = compiled_module("drfemu.nodes._engine")
_plane = compiled_module("drfemu.nodes._plane")


def needs(module: Any, name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(module is None, reason=f"drfemu.{name}: {SKIP_REASON}")


# -- hostile values ---------------------------------------------------------------------------

class FloatSub(float):
    """A float that is not an exact float."""


class IntSub(int):
    """An int that is not an exact int."""


class Trap:
    """A number that, the first time Python asks anything of it, empties the container it sits in
    (`spring`), then behaves as `value`. A C loop that kept a borrowed pointer into the container
    reads freed memory."""

    def __init__(self, value: float, world: World) -> None:
        self.value, self.world = value, world

    def _spring(self) -> float:
        self.world.spring()
        return self.value

    def __float__(self) -> float:
        return float(self._spring())

    def __index__(self) -> int:
        return int(self._spring())

    def __int__(self) -> int:
        return int(self._spring())

    def __hash__(self) -> int:
        return hash(self._spring())

    def __eq__(self, other: object) -> bool:
        return self._spring() == (other.value if isinstance(other, Trap) else other)

    def __lt__(self, other: Any) -> bool:
        return self._spring() < (other.value if isinstance(other, Trap) else other)

    def __gt__(self, other: Any) -> bool:
        return self._spring() > (other.value if isinstance(other, Trap) else other)

    def __le__(self, other: Any) -> bool:
        return self._spring() <= (other.value if isinstance(other, Trap) else other)

    def __ge__(self, other: Any) -> bool:
        return self._spring() >= (other.value if isinstance(other, Trap) else other)

    def __neg__(self) -> float:
        return -self._spring()

    def __mul__(self, other: Any) -> float:
        return self._spring() * other

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"Trap({self.value!r})"


class World:
    """The containers of one call; a trap empties them all the first time it springs."""

    def __init__(self) -> None:
        self.containers: list[Any] = []
        self.sprung = False

    def hold(self, container: Any) -> Any:
        self.containers.append(container)
        return container

    def spring(self) -> None:
        if not self.sprung:
            self.sprung = True
            for container in self.containers:
                container.clear()


NUMBER_KINDS = ["float", "int", "nan", "inf", "huge", "bool", "floatsub", "intsub", "trap", "str"]


def make(kind: str, value: float, world: World) -> Any:
    """A number of the given kind near `value`."""
    return {
        "float": lambda: float(value),
        "int": lambda: int(value),
        "nan": lambda: math.nan,
        "inf": lambda: -math.inf if value < 0 else math.inf,
        "huge": lambda: 2**70 + int(value),
        "bool": lambda: bool(int(value) % 2),
        "floatsub": lambda: FloatSub(value),
        "intsub": lambda: IntSub(int(value)),
        "trap": lambda: Trap(value, world),
        "str": lambda: str(value),
    }[kind]()


numbers = st.tuples(st.sampled_from(NUMBER_KINDS), st.integers(-3, 12).map(float))
mostly_plain = st.one_of(st.tuples(st.just("float"), st.integers(-3, 12).map(float)), numbers)
mostly_plain_ints = st.one_of(st.tuples(st.just("int"), st.integers(-3, 12).map(float)), numbers)


def outcome(function: Callable[..., Any], args: tuple[Any, ...], originals: list[Any]) -> tuple[Any, ...]:
    """What `function(*args)` did: ("value", the result with every object it returns from
    `originals` named by its position there) or ("raised", type, message)."""
    try:
        value = function(*args)
    except Exception as error:  # noqa: BLE001 - the point is to compare any exception
        return ("raised", type(error), str(error))
    return ("value", named(value, originals))


def named(value: Any, originals: list[Any]) -> Any:
    if isinstance(value, list | tuple):
        return (type(value).__name__, [named(item, originals) for item in value])
    for position, original in enumerate(originals):
        if value is original:
            return ("#", position)
    return ("=", repr(value))


def hostile_candidates(descriptors: list[Any], shape: str, world: World) -> list[Any]:
    """The gradient's candidates, made in `world` from drawn (utility, node, stamp) kinds: tuples,
    or with `shape` "short" 2-tuples, "list" lists."""
    candidates = world.hold([])
    for u, node, stamp in descriptors:
        fields = (make(*u, world), make(*node, world), make(*stamp, world))
        candidates.append(fields[:2] if shape == "short" else list(fields) if shape == "list" else fields)
    return candidates


# -- the gradient's merge ---------------------------------------------------------------------

@needs(_rank, "overlay._rank")
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(mostly_plain, mostly_plain_ints, mostly_plain), max_size=12), mostly_plain_ints,
       mostly_plain, st.one_of(st.integers(-2, 6), st.sampled_from([2**70, 2.0, True])),
       st.one_of(st.none(), mostly_plain), st.sampled_from(["tuple", "short", "list"]))
def test_rank_matches_its_reference_on_any_input(descriptors: list[Any], me: Any, my_utility: Any, size: Any,
                                                 oldest: Any, shape: str) -> None:
    runs = []
    for rank in (_rank.rank, rank_python):  # type: ignore[union-attr]
        world = World()
        candidates = hostile_candidates(descriptors, shape, world)
        originals = list(candidates)
        args = [make(*me, world), make(*my_utility, world), candidates, size]
        if oldest is not None:
            args.append(make(*oldest, world))
        runs.append(outcome(rank, tuple(args), originals))
    assert runs[0] == runs[1]


@needs(_rank, "overlay._rank")
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(mostly_plain, mostly_plain_ints, mostly_plain), max_size=12),
       st.sampled_from(["tuple", "short", "list", "a tuple of them"]))
def test_freshest_matches_its_reference_on_any_input(descriptors: list[Any], shape: str) -> None:
    runs = []
    for freshest in (_rank.freshest, freshest_python):  # type: ignore[union-attr]
        world = World()
        candidates = hostile_candidates(descriptors, shape, world)
        originals = list(candidates)
        runs.append(outcome(freshest, (tuple(candidates) if shape == "a tuple of them" else candidates,), originals))
    assert runs[0] == runs[1]


@needs(_rank, "overlay._rank")
def test_rank_survives_a_float_that_empties_the_candidates() -> None:
    """The reported crash: `__float__` clearing the candidate list while the C held its items."""
    runs = []
    for rank in (_rank.rank, rank_python):  # type: ignore[union-attr]
        world = World()
        candidates = world.hold([(Trap(0.5, world), 1, 0.0), (0.7, 2, 0.0), (0.9, 3, 0.0)])
        runs.append(outcome(rank, (0, 0.0, candidates, 2), []))
    assert runs[0] == runs[1] and runs[0][0] == "value"


# -- Cyclon -----------------------------------------------------------------------------------

class Draws:
    """A draw object whose `random()` returns the given values in turn (then 0.5)."""

    def __init__(self, values: list[Any], world: World | None = None, view: Any = None) -> None:
        self.values, self.world, self.view, self.calls = list(values), world, view, 0

    def random(self) -> Any:
        self.calls += 1
        if self.view is not None and self.view:  # a draw that changes the view it draws from
            self.view.pop(next(iter(self.view)))
        return self.values.pop(0) if self.values else 0.5


class OwnRandom(random.Random):
    def random(self) -> float:
        return 1.0


class SubRandom(random.Random):
    """A subclass that keeps random.Random's draw: still the stock generator."""


DRAW_KINDS = ["stock", "subclass", "values", "own", "instance", "mutating"]
draw_values = st.lists(st.sampled_from([0.0, 0.5, 0.999, 1.0, -3.0, -0.5, math.nan, math.inf, 2, FloatSub(0.25),
                                        "x", None]), max_size=4)


def make_draw(kind: str, seed: int, values: list[Any], view: Any) -> Any:
    if kind == "stock":
        return random.Random(seed)
    if kind == "subclass":
        return SubRandom(seed)
    if kind == "own":
        return OwnRandom(seed)
    if kind == "instance":
        draw = random.Random(seed)
        draw.random = Draws(values).random  # type: ignore[method-assign]
        return draw
    return Draws(values, view=view if kind == "mutating" else None)


def draw_state(draw: Any) -> Any:
    return draw.getstate() if isinstance(draw, random.Random) and not isinstance(draw, OwnRandom) else (
        getattr(draw, "calls", None), getattr(draw, "values", None))


def make_view(kind: str, entries: list[tuple[Any, ...]]) -> Any:
    view: Any = _cyclon.View(64) if kind == "View" else {}  # type: ignore[union-attr]
    for descriptor in entries:
        view[descriptor[1]] = descriptor
    return view


view_entries = st.lists(st.integers(0, 30), max_size=12, unique=True)


@needs(_cyclon, "overlay._cyclon")
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["View", "dict"]), view_entries, st.one_of(st.integers(-2, 14), st.sampled_from(
       [2**70, 2.0, True, IntSub(2)])), st.sampled_from(DRAW_KINDS), st.integers(0, 2**16), draw_values)
def test_sample_values_matches_its_reference_on_any_input(kind: str, nodes: list[int], k: Any, draw_kind: str,
                                                          seed: int, values: list[Any]) -> None:
    runs = []
    for sample_values in (_cyclon.sample_values, cyclon_module.sample_values_python):  # type: ignore[union-attr]
        descriptors = [(float(node), node, float(node % 4)) for node in nodes]
        view = make_view(kind, descriptors)
        draw = make_draw(draw_kind, seed, values, view)
        result = outcome(sample_values, (draw, view, k), descriptors)
        runs.append((result, list(view.items()), draw_state(draw)))
    assert runs[0] == runs[1]


@needs(_cyclon, "overlay._cyclon")
@pytest.mark.parametrize("value", [1.0, -3.0, -0.5, math.nan, math.inf])
@pytest.mark.parametrize("k", [1, 2])
def test_a_draw_outside_the_unit_interval_gets_pythons_answer(value: float, k: int) -> None:
    """The reported crashes and hangs: a draw of 1.0 or below 0 on a full View (a segfault, an
    endless loop), and on a dict (a tuple with a NULL slot)."""
    for kind in ("View", "dict"):
        runs = []
        for sample_values in (_cyclon.sample_values, cyclon_module.sample_values_python):  # type: ignore[union-attr]
            descriptors = [(0.0, node, float(node)) for node in range(5)]
            runs.append(outcome(sample_values, (Draws([value]), make_view(kind, descriptors), k), descriptors))
        assert runs[0] == runs[1]
        assert runs[0][0] == "raised" or value == -0.5  # int(-0.5 * n) == 0: Python's answer is the first


WALK_NODES = {"int": lambda n: n, "huge": lambda n: 2**70 + n, "bool": lambda n: bool(n % 2), "intsub": IntSub,
              "str": str}
walk_nodes = st.lists(st.tuples(st.sampled_from(["int", "int", "int", "int", "huge", "bool", "intsub", "str"]),
                                st.integers(0, 20)), max_size=10)


@needs(_cyclon, "overlay._cyclon")
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["View", "dict", "nodes", "repeats"]), st.lists(st.integers(0, 20), max_size=10, unique=True),
       st.sampled_from(["int", "int", "intsub"]), walk_nodes, walk_nodes, st.sampled_from(["tuple", "tuple", "list"]),
       st.sampled_from(DRAW_KINDS), st.integers(0, 2**16), draw_values)
def test_a_walks_hop_matches_its_reference_on_any_input(kind: str, peers: list[int], peer_kind: str,
                                                       visited: list[tuple[str, int]], frontier: list[tuple[str, int]],
                                                       container: str, draw_kind: str, seed: int,
                                                       values: list[Any]) -> None:
    """`frontier_hop` (a walk's hop over a Cyclon view, or over the list of its nodes, repeated ones
    too): the reference's hop, draw and exception, whatever the walk carries (overlapping, repeated,
    huge, non-int nodes) and whatever draws."""
    runs = []
    for frontier_hop in (_cyclon.frontier_hop, cyclon_module.frontier_hop_python):  # type: ignore[union-attr]
        nodes = [(0.5, WALK_NODES[peer_kind](node), float(node % 3)) for node in peers]
        view = make_view("dict" if kind in ("nodes", "repeats") else kind, nodes)
        listed = list(view) + (list(view)[:2] if kind == "repeats" else [])
        walked = [WALK_NODES[k](n) for k, n in visited]
        queued = [WALK_NODES[k](n) for k, n in frontier]
        pack = tuple if container == "tuple" else list
        draw = make_draw(draw_kind, seed, values, view)
        originals = walked + queued + [d[1] for d in nodes]
        peers_given = listed if kind in ("nodes", "repeats") else view
        result = outcome(frontier_hop, (pack(walked), pack(queued), peers_given, draw), originals)
        runs.append((result, list(view.items()), listed, draw_state(draw)))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("value", [1.0, 2.0, -3.0, math.nan])
def test_sample_on_a_sequence_is_its_reference_and_ends(value: float) -> None:
    """The reported endless loop: the compiled `sample(draw, range(5), 2)` never returned for a
    draw of 1.0 (and quietly wrapped −3.0). `sample` is now the Python function, which no hot
    path calls, so any draw gets Python's own answer."""
    assert cyclon_module.sample is cyclon_module.sample_python
    result = outcome(cyclon_module.sample, (Draws([value]), range(5), 2), [])
    assert result[0] == "raised" and result[1] in (IndexError, ValueError), result


received_nodes = st.lists(st.tuples(st.sampled_from(["int", "int", "int", "huge", "bool", "intsub", "trap", "str"]),
                                    st.integers(0, 30)), max_size=8)


@needs(_cyclon, "overlay._cyclon")
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["View", "dict"]), view_entries, received_nodes, st.lists(st.integers(0, 30), max_size=4),
       mostly_plain_ints, st.one_of(st.integers(-2, 14), st.sampled_from([2**70, 4.0])),
       st.sampled_from(["tuple", "list"]), mostly_plain)
def test_merge_matches_its_reference_on_any_input(kind: str, nodes: list[int], received: list[tuple[str, int]],
                                                  sent: list[int], me: Any, size: Any, container: str,
                                                  stamp: Any) -> None:
    runs = []
    for merge in (_cyclon.merge, cyclon_module.merge_python):  # type: ignore[union-attr]
        world = World()
        held = [(float(node), node, float(node % 4)) for node in nodes]
        view = make_view(kind, held)
        incoming = [(0.5, make(node_kind, node, world), make(*stamp, world)) for node_kind, node in received]
        incoming_container = world.hold(incoming if container == "list" else [])
        given_received: Any = incoming_container if container == "list" else tuple(incoming)
        replaceable = tuple((0.0, node, 0.0) for node in sent)
        originals = held + incoming
        result = outcome(merge, (view, make(*me, world), size, given_received, replaceable), originals)
        runs.append((result, named(list(view.values()), originals) if len(view) == len(list(view.values())) else None))
    assert runs[0] == runs[1]


@needs(_cyclon, "overlay._cyclon")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["View", "dict"]), st.lists(mostly_plain, max_size=8))
def test_pop_oldest_matches_its_reference_on_any_stamps(kind: str, stamps: list[Any]) -> None:
    runs = []
    for pop_oldest in (_cyclon.pop_oldest, cyclon_module.pop_oldest_python):  # type: ignore[union-attr]
        world = World()
        descriptors = [(0.0, node, make(*stamp, world)) for node, stamp in enumerate(stamps)]
        view = world.hold(make_view(kind, descriptors))
        result = outcome(pop_oldest, (view,), descriptors)
        runs.append((result, [node for node in list(view)]))
    assert runs[0] == runs[1]


# -- PDGDRF's Gini test -----------------------------------------------------------------------

@needs(_gini, "protocols._gini")
@settings(max_examples=400, deadline=None)
@given(mostly_plain, mostly_plain, st.lists(mostly_plain, max_size=8), st.sampled_from(["list", "tuple", "iterator"]))
def test_lowers_gini_matches_its_reference_on_any_input(share: Any, task: Any, utilities: list[Any],
                                                        container: str) -> None:
    runs = []
    for lowers_gini in (_gini.lowers_gini, lowers_gini_python):  # type: ignore[union-attr]
        world = World()
        values = world.hold([make(*u, world) for u in utilities])
        given_values: Any = {"list": values, "tuple": tuple(values), "iterator": iter(values)}[container]
        runs.append(outcome(lowers_gini, (make(*share, world), make(*task, world), given_values), []))
    assert runs[0] == runs[1]


@needs(_gini, "protocols._gini")
@settings(max_examples=300, deadline=None)
@given(st.lists(mostly_plain, max_size=8), st.sampled_from(["list", "tuple", "iterator"]))
def test_fsum_is_math_fsum_on_any_input(values: list[Any], container: str) -> None:
    runs = []
    for fsum in (_gini.fsum, math.fsum):  # type: ignore[union-attr]
        world = World()
        items = world.hold([make(*value, world) for value in values])
        given_items: Any = {"list": items, "tuple": tuple(items), "iterator": iter(items)}[container]
        runs.append(outcome(fsum, (given_items,), []))
    assert runs[0] == runs[1]


# -- the probe's hearing ----------------------------------------------------------------------

class Republishing:
    """A server as `hear` sees it: it counts its `republish` calls, and raises at the `fails`-th."""

    def __init__(self, fails: int) -> None:
        self.calls, self.fails = 0, fails

    def republish(self) -> None:
        self.calls += 1
        if self.calls == self.fails:
            raise RuntimeError("republish failed")


class LowAsProperty(ProbeRule):
    """A rule whose `low` is a property, not its slot: the C must read and set it through Python."""

    __slots__ = ("_low_value",)

    @property
    def low(self) -> Any:
        return self._low_value

    @low.setter
    def low(self, value: Any) -> None:
        self._low_value = value


class PlainNotice:
    """A notice of a class without slots: its fields are in its instance dict."""

    def __init__(self, user: Any, task: Any, share: Any) -> None:
        self.user, self.task, self.share = user, task, share


SHARE_KINDS = ["float", "float", "float", "nan", "inf", "floatsub", "int", "trap", "negzero"]
INT_KINDS = ["int", "int", "int", "intsub", "huge", "float", "bool", "trap"]


def make_share(kind: str, value: float, world: World) -> Any:
    return -0.0 if kind == "negzero" else make(kind, value / 4, world)


shares = st.tuples(st.sampled_from(SHARE_KINDS), st.integers(0, 3).map(float))
ints = st.tuples(st.sampled_from(INT_KINDS), st.integers(0, 3).map(float))
entries = st.tuples(st.sampled_from(["tuple", "tuple", "tuple", "list", "short"]), shares, ints, ints, ints)
hearing = st.fixed_dictionaries({
    "rule": st.sampled_from(["plain", "plain", "property"]), "msg": st.sampled_from(["slots", "slots", "dict"]),
    "user": ints, "task": ints, "share": shares, "ticks": ints,
    "heard": st.dictionaries(st.integers(0, 3), entries, max_size=3), "counting": st.sampled_from(["set", "list"]),
    "low_known": st.sampled_from([True, True, False, 1]),
    "low": st.one_of(st.none(), st.tuples(st.sampled_from(["tuple", "tuple", "list"]), shares, ints, ints)),
    "stuck": st.sampled_from(["same", "same", "one", "two", "three", "float", "intsub"]), "fails": st.sampled_from([-1, -1, 1]),
})


def hearing_world(spec: dict[str, Any]) -> tuple[Any, ...]:
    """One world of a drawn hearing: the rule, its server, the notice, the STUCK_TICKS to use."""
    world = World()
    rule = (LowAsProperty if spec["rule"] == "property" else ProbeRule)()
    rule.heard = world.hold({})
    for user, (shape, share, tick, since, task) in spec["heard"].items():
        fields = (make_share(*share, world), make(*tick, world), make(*since, world), make(*task, world))
        rule.heard[user] = list(fields) if shape == "list" else fields[:3] if shape == "short" else fields  # type: ignore[assignment]
    rule.counting = world.hold(set() if spec["counting"] == "set" else [])
    rule.ticks = make(*spec["ticks"], world)
    rule.low_known = spec["low_known"]
    if spec["low"] is not None:
        shape, share, user, task = spec["low"]
        low = (make_share(*share, world), make(*user, world), make(*task, world))
        rule.low = list(low) if shape == "list" else low  # type: ignore[assignment]
    notice = (make(*spec["user"], world), make(*spec["task"], world), make_share(*spec["share"], world))
    msg = PlainNotice(*notice) if spec["msg"] == "dict" else LowestShare(*notice)
    stuck = {"same": probe_module.STUCK_TICKS, "one": 1, "two": 2, "three": 3, "float": 2.5,
             "intsub": IntSub(2)}[spec["stuck"]]
    return rule, Republishing(spec["fails"]), msg, stuck


def hearing_state(rule: Any, server: Republishing) -> str:
    return repr((list(rule.heard.items()), sorted(map(repr, rule.counting)), rule.ticks, rule.low_known, rule.low,
                 server.calls))


@needs(_probe, "protocols._probe")
@settings(max_examples=1500, deadline=None)
@given(hearing)
def test_the_probes_hearing_matches_its_reference_on_any_input(spec: dict[str, Any]) -> None:
    """The same state left (the table of hearings in its order, `0.0` and `-0.0` told apart by
    repr), the same republish calls, and the same result or exception, whatever the rule, the
    notice and the module's STUCK_TICKS hold."""
    runs = []
    saved = probe_module.STUCK_TICKS
    try:
        for hear in (_probe.hear, ProbeRule.hear):  # type: ignore[union-attr]
            rule, server, msg, stuck = hearing_world(spec)
            probe_module.STUCK_TICKS = stuck
            runs.append((outcome(hear, (rule, server, msg, 0.5), []), hearing_state(rule, server)))
    finally:
        probe_module.STUCK_TICKS = saved
    assert runs[0] == runs[1]


@needs(_probe, "protocols._probe")
@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(st.just("tick"), st.just("lowest"),
                          st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.3]))),
                max_size=80),
       st.sampled_from([1, 2, 20]))
def test_the_probes_hearing_matches_its_reference_over_a_run(steps: list[Any], stuck: int) -> None:
    """Plain notices, as a run hears them, between ticks and the band's minimum asked for: the
    C and the reference leave the same state and republish alike at every step."""
    rules, servers = (ProbeRule(), ProbeRule()), (Republishing(-1), Republishing(-1))
    saved = probe_module.STUCK_TICKS
    probe_module.STUCK_TICKS = stuck
    try:
        for step in steps:
            for rule, server, hear in zip(rules, servers, (_probe.hear, ProbeRule.hear)):  # type: ignore[union-attr]
                if step == "tick":  # as `on_tick` starts
                    rule.ticks += 1
                    rule.low_known = False
                elif step == "lowest":
                    rule._lowest()
                else:
                    hear(rule, server, LowestShare(*step), 0.5)
            assert hearing_state(rules[0], servers[0]) == hearing_state(rules[1], servers[1])
    finally:
        probe_module.STUCK_TICKS = saved


@needs(_probe, "protocols._probe")
@pytest.mark.parametrize("waited", [probe_module.STUCK_TICKS - 1, probe_module.STUCK_TICKS, probe_module.STUCK_TICKS + 1])
def test_the_probes_hearing_at_the_edge_of_stuck(waited: int) -> None:
    """A user heard again with the share it has held `waited` ticks, out of `counting` and below the
    minimum kept: it counts (and becomes the minimum) up to STUCK_TICKS ticks, not after."""
    states = []
    for hear in (_probe.hear, ProbeRule.hear):  # type: ignore[union-attr]
        rule, server = ProbeRule(), Republishing(-1)
        rule.ticks, rule.low_known, rule.low = 30, True, (0.5, 8, 0)
        rule.heard = {7: (0.25, 30, 30 - waited, 1), 8: (0.5, 30, 30, 0)}
        hear(rule, server, LowestShare(7, 1, 0.25), 0.5)  # type: ignore[arg-type]
        states.append(hearing_state(rule, server))
    assert states[0] == states[1]
    assert ("(0.25, 7, 1)" in states[0]) == (waited <= probe_module.STUCK_TICKS)


@needs(_probe, "protocols._probe")
def test_the_probes_hearing_is_its_servers_handler_of_notices() -> None:
    """Where the C is built, a probe server hands its `LowestShare` notices to it."""
    assert ProbeRule.HANDLERS[LowestShare] is _probe.hear  # type: ignore[union-attr]


# -- the engine -------------------------------------------------------------------------------

@message
class Note:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


class Noting(Actor):
    __slots__ = ("log",)

    def __init__(self, actor_id: int, log: list[tuple[int, int]]) -> None:
        super().__init__(actor_id)
        self.log = log

    @handles(Note)
    def on_note(self, msg: Note, now: float) -> None:
        self.log.append((self.id, msg.tag))


dst_kinds = st.tuples(st.sampled_from(["int", "int", "int", "negative", "huge", "intsub", "bool", "trap", "str",
                                       "list", "triple"]), st.integers(0, 4))


def make_delivery(kind: str, dst: int, tag: int, world: World) -> Any:
    msg = Note(tag)
    return {"int": lambda: (dst, msg), "negative": lambda: (dst - 5, msg), "huge": lambda: (2**70, msg),
            "intsub": lambda: (IntSub(dst), msg), "bool": lambda: (bool(dst % 2), msg),
            "trap": lambda: (Trap(dst, world), msg), "str": lambda: ("0", msg), "list": lambda: [dst, msg],
            "triple": lambda: (dst, msg, 0)}[kind]()


@needs(_engine, "nodes._engine")
@settings(max_examples=300, deadline=None)
@given(st.lists(dst_kinds, max_size=10), st.booleans())
def test_deliver_matches_its_reference_on_any_input(sends: list[tuple[str, int]], inline: bool) -> None:
    runs = []
    for deliver in (_engine.deliver, deliver_python):  # type: ignore[union-attr]
        world = World()
        log: list[tuple[int, int]] = []
        actors: list[Actor] = [Noting(i, log) for i in range(5)]
        deliveries = world.hold([make_delivery(kind, dst, tag, world) for tag, (kind, dst) in enumerate(sends)])
        mailboxes: list[list[Any]] = [[] for _ in actors]
        batch: list[Any] = []
        result = outcome(deliver, (deliveries, mailboxes, actors, [inline] * 5, 1.0, batch, print), [])
        runs.append((result, log, [[m.tag for m in box] for box in mailboxes]))
    assert runs[0] == runs[1]


class Meta(type):
    """A metaclass whose `__eq__` and `__hash__` run Python code, as a dict lookup of the class does."""

    world: World | None = None

    def __eq__(cls, other: object) -> bool:
        if Meta.world is not None:
            Meta.world.spring()
        return cls is other

    def __hash__(cls) -> int:
        if Meta.world is not None:
            Meta.world.spring()
        return id(cls) >> 4


class Odd(metaclass=Meta):
    items = (1, 2)


class Claims:
    """A message that says it is a Note (a `__class__` of its own)."""

    items = (1, 2, 3)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return Note


class Shrinking:
    """A message whose counted field empties the send list when read."""

    def __init__(self, world: World) -> None:
        self.world = world

    @property
    def items(self) -> tuple[int, ...]:
        self.world.spring()
        return (1,)


class Huge:
    class Sized:
        def __len__(self) -> int:
            return sys.maxsize

    items = Sized()


msg_kinds = st.lists(st.sampled_from(["note", "odd", "claims", "shrinking", "huge", "list", "triple"]), max_size=8)


def make_send(kind: str, world: World) -> Any:
    msg: Any = {"note": lambda: Note(1), "odd": Odd, "claims": Claims, "shrinking": lambda: Shrinking(world),
                "huge": Huge, "list": lambda: Note(2), "triple": lambda: Note(3)}[kind]()
    return [0, msg] if kind == "list" else (0, msg, 0) if kind == "triple" else (0, msg)


@needs(_engine, "nodes._engine")
@settings(max_examples=300, deadline=None)
@given(msg_kinds, st.sampled_from([Note, Shrinking, Huge, Odd]))
def test_count_types_and_count_items_match_their_references(kinds: list[str], cls: type) -> None:
    engine: Any = _engine
    for compiled, reference, args in ((engine.count_types, count_types_python, ()),
                                      (engine.count_items, count_items_python, (cls, "items"))):
        runs = []
        for count in (compiled, reference):
            world = World()
            Meta.world = world
            out = world.hold([make_send(kind, world) for kind in kinds])
            runs.append(outcome(count, (out, *args), [Note, Odd, Claims, Shrinking, Huge]))
            Meta.world = None
        assert runs[0] == runs[1]


class RuleNode:
    """A server whose `rule` attribute is whatever the case puts there."""

    def __init__(self, rule: Any) -> None:
        if rule is not None:
            self.rule = rule


class RuleWithProperty:
    @property
    def rule(self) -> Any:
        raise LookupError("no rule here")


def rule_handler_case(kind: str) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """(handler, args, keywords) of one call of a server's dispatch entry."""
    heard: list[Any] = []

    def handler(rule: Any, node: Any, msg: Any, now: Any) -> str:
        heard.append((rule, msg, now))
        return "discarded"  # the entry returns None whatever the handler returns

    def failing(rule: Any, node: Any, msg: Any, now: Any) -> None:
        raise ValueError(f"handler failed on {msg!r}")

    node = RuleNode("the rule")
    return {
        "plain": (handler, (node, "msg", 1.5), {}),
        "keywords": (handler, (node, "msg"), {"now": 2.0}),
        "all keywords": (handler, (), {"node": node, "msg": "m", "now": 0.0}),
        "too few": (handler, (node, "msg"), {}),
        "too many": (handler, (node, "msg", 1.0, "extra"), {}),
        "unknown keyword": (handler, (node, "msg", 1.0), {"then": 3}),
        "no rule": (handler, (RuleNode(None), "msg", 1.0), {}),
        "rule raises": (handler, (RuleWithProperty(), "msg", 1.0), {}),
        "handler raises": (failing, (node, "msg", 1.0), {}),
        "not callable": ("not a function", (node, "msg", 1.0), {}),
    }[kind]


@needs(_engine, "nodes._engine")
@pytest.mark.parametrize("kind", ["plain", "keywords", "all keywords", "too few", "too many", "unknown keyword",
                                  "no rule", "rule raises", "handler raises", "not callable"])
def test_rule_handler_matches_its_reference_on_any_call(kind: str) -> None:
    from drfemu.nodes.rule_dispatch import to_rule_python
    engine: Any = _engine
    results = []
    for make in (engine.rule_handler, to_rule_python):
        handler, args, keywords = rule_handler_case(kind)
        entry = make(handler)
        try:
            value = ("value", entry(*args, **keywords))
        except Exception as error:  # noqa: BLE001 - the point is to compare any exception
            value = ("raised", type(error), str(error).replace("to_rule_python.<locals>.", ""))
        results.append(value)
    assert results[0] == results[1]
    assert kind != "plain" or results[0] == ("value", None)


# -- the overlay exchanges --------------------------------------------------------------------

def _exchange_worlds() -> Any:
    from drfemu.nodes.overlay_peer import PYTHON_EXCHANGES, OverlayPeer
    return PYTHON_EXCHANGES, OverlayPeer


def _state(peer: Any) -> Any:
    """A peer's state, to compare; the entries a Cyclon sent as the tuple they are to the reference (the
    C exchanges keep them as a store of structs where they ran on the view's arrays)."""
    c, g = peer.cyclon, peer.gradient
    return repr((list(c.entries.items()), c._partner, tuple(c._sent), list(g._view), list(g._pending), g._own,
                 g._clock, g._stale, peer.outbox, peer.cyclon_exchanges, peer.gradient_exchanges,
                 type(peer.feeds_gradient)))


hostile_steps = st.lists(st.one_of(
    st.tuples(st.just("cyclon_round"), st.sampled_from(["float", "floatsub", "nan", "int"])),
    st.tuples(st.just("gradient_round"), st.sampled_from(["float", "floatsub", "nan", "int"]),
              st.sampled_from([None, 1.0, -0.5, -3.0, math.nan, "x"])),
    st.tuples(st.just("cyclon_shuffle"), received_nodes.filter(bool)),
    st.tuples(st.just("cyclon_reply"), received_nodes),
    st.tuples(st.just("gradient_shuffle"), received_nodes.filter(bool)),
    st.tuples(st.just("gradient_reply"), received_nodes),
    st.tuples(st.just("feeds"), st.sampled_from([True, False, 0, 1, "", "refuses"])),
    st.tuples(st.just("draw"), st.sampled_from(["own-draw", "unset", "other-attr", "own-class", "stock-class",
                                                "new-dict"])),
), max_size=12)


def change_draw(draw: Any, how: str) -> None:
    """Change a Cyclon's stream in place, as a user's code could between two steps: the plane,
    which remembers the stream it found stock, must see each change."""
    if how == "own-draw":
        draw.random = Draws([0.3, 0.7, 0.1, 0.9]).random
    elif how == "unset":
        vars(draw).pop("random", None)
    elif how == "other-attr":
        draw.note = len(vars(draw))
    elif how == "own-class":
        draw.__class__ = OwnRandom
    elif how == "stock-class":
        draw.__class__ = random.Random
    else:
        draw.__dict__ = dict(vars(draw))


class RefusesTruth:
    """A `feeds_gradient` that cannot say whether it is true."""

    def __bool__(self) -> bool:
        raise ValueError("neither true nor false")


def _adopted(peer: Any) -> None:
    """`peer`'s overlay state held by a plane of its own (the C methods then run on its arrays)."""
    from drfemu.nodes import plane as plane_module
    from drfemu.nodes.overlay_peer import LANE_MARKS
    plane = _plane.Plane(16, LANE_MARKS, peer.cyclon.size, peer.cyclon.length, peer.gradient.size,  # type: ignore[union-attr]
                         peer.gradient.max_age, plane_module.evict)
    peer.lane = plane
    assert plane_module.adopt(plane, peer)


@needs(_plane, "nodes._plane")
@settings(max_examples=300, deadline=None)
@given(hostile_steps, st.integers(0, 2**16))
def test_the_exchanges_match_their_references_on_hostile_messages_and_draws(program: list[tuple[Any, ...]],
                                                                            seed: int) -> None:
    """A peer whose state a plane holds, driven by the C methods, and one on its Python objects,
    driven by the references: hostile nodes in messages, a `now` that is not a float, draws that are
    not the stock generator's, a stream changed in place, a `feeds_gradient` without a truth. The
    adopted peer hands itself to the objects before anything changes, so both end alike."""
    from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle
    references, peer_class = _exchange_worlds()
    peers, worlds = [], []
    for _ in range(2):
        peer = peer_class(3, 2, 4, 2, random.Random(seed), utility=0.5, max_age=2.0)
        peer.join([(0.1 * p, p, 0.0) for p in range(8)])
        peers.append(peer)
        worlds.append(World())
    _adopted(peers[0])
    now = {"float": 1.0, "floatsub": FloatSub(1.0), "nan": math.nan, "int": 1}
    for step in program:
        runs = []
        for peer, world, compiled in ((peers[0], worlds[0], True), (peers[1], worlds[1], False)):
            world.hold(peer.outbox)

            def method(name: str, compiled: bool = compiled) -> Any:
                return getattr(peer_class, name) if compiled else references[name]

            def descriptors(nodes: list[tuple[str, int]], world: World = world) -> tuple[Any, ...]:
                return tuple((0.25, make(kind, node, world), 1.0) for kind, node in nodes)

            kind = step[0]
            if kind == "draw":
                change_draw(peer.cyclon.rng, step[1])
                runs.append(("set",))
                continue
            if kind == "feeds":  # offer Cyclon's samples to the gradient, or not (`feeds_gradient`)
                peer.feeds_gradient = RefusesTruth() if step[1] == "refuses" else step[1]
                runs.append(("set",))
                continue
            if kind == "cyclon_round":
                call, args = method("cyclon_round"), (peer, now[step[1]])
            elif kind == "gradient_round":
                if step[2] is not None:
                    peer.gradient.rng = Draws([step[2]])
                call, args = method("gradient_round"), (peer, now[step[1]])
            elif kind == "cyclon_shuffle":
                call, args = method("_on_cyclon_shuffle"), (peer, CyclonShuffle(descriptors(step[1])), 1.0)
            elif kind == "cyclon_reply":
                call, args = method("_on_cyclon_reply"), (peer, CyclonReply(1, descriptors(step[1])), 1.0)
            elif kind == "gradient_shuffle":
                call, args = method("_on_gradient_shuffle"), (peer, GradientShuffle(descriptors(step[1])), 1.0)
            else:
                call, args = method("_on_gradient_reply"), (peer, GradientReply(descriptors(step[1])), 1.0)
            runs.append(outcome(call, args, []))
        assert runs[0] == runs[1], step
        assert _state(peers[0]) == _state(peers[1]), step


@needs(_plane, "nodes._plane")
@pytest.mark.parametrize("changes", [["own-draw"], ["own-draw", "unset"], ["other-attr", "own-draw"], ["own-class"],
                                     ["own-class", "stock-class"], ["new-dict", "own-draw"], ["other-attr"]])
def test_a_stream_changed_in_place_is_drawn_from_as_it_is_now(changes: list[str]) -> None:
    """The plane remembers a peer's stream it found stock; a change in place (an instance `random`,
    another class, a new instance dict, another attribute) made after its rounds drew from it is
    seen at the next round, which draws as the reference does."""
    from drfemu.overlay.messages import CyclonReply
    references, peer_class = _exchange_worlds()
    peers = []
    for _ in range(2):
        peer = peer_class(3, 2, 4, 2, random.Random(5), utility=0.5, max_age=2.0)
        peer.join([(0.1 * p, p, 0.0) for p in range(8)])
        peers.append(peer)
    _adopted(peers[0])
    for step in range(6):
        if 1 <= step <= len(changes):
            for peer in peers:
                change_draw(peer.cyclon.rng, changes[step - 1])
        runs = []
        for peer, compiled in ((peers[0], True), (peers[1], False)):
            refill = CyclonReply(1, tuple((0.25, 10 + 3 * step + j, 1.0) for j in range(3)))
            reply = peer_class._on_cyclon_reply if compiled else references["_on_cyclon_reply"]
            round_ = peer_class.cyclon_round if compiled else references["cyclon_round"]
            runs.append((outcome(reply, (peer, refill, 1.0), []), outcome(round_, (peer, 1.0), [])))
        assert runs[0] == runs[1], step
        assert _state(peers[0]) == _state(peers[1]), step


@needs(_plane, "nodes._plane")
def test_the_plane_configuration_is_written_once() -> None:
    from drfemu.nodes import overlay_peer
    from drfemu.overlay.gradient import Gradient
    messages = (*overlay_peer.OVERLAY_MESSAGES, overlay_peer.JoinRequest)
    peer = overlay_peer.OverlayPeer
    names = (*overlay_peer.PYTHON_EXCHANGES, "_on_row")  # the exchanges and the marks' handler (no reference)
    in_use = {name: getattr(peer, name) for name in names}
    view = getattr(cyclon_module, "View", None)
    again = _plane.peer_methods(peer, messages, overlay_peer.PYTHON_EXCHANGES, view,  # type: ignore[union-attr]
                                Gradient.COMPACT_AT)
    assert again == in_use  # the same configuration: the same methods
    with pytest.raises(RuntimeError, match="configured already"):
        _plane.peer_methods(Actor, messages, overlay_peer.PYTHON_EXCHANGES, view, 1)  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        _plane.peer_methods(peer, messages, overlay_peer.PYTHON_EXCHANGES, view)  # type: ignore[union-attr]
    assert {name: getattr(peer, name) for name in names} == in_use


def test_a_fresh_configuration_refuses_classes_it_cannot_fill() -> None:
    """In a fresh process (nothing configured yet): message classes other than plain `@message`
    ones with the expected fields are refused, and the refusal leaves the module unconfigured."""
    if _plane is None:
        pytest.skip(f"drfemu.nodes._plane: {SKIP_REASON}")
    script = """
import importlib, sys
sys.modules["drfemu.nodes.overlay_peer"] = None  # keep the package from configuring the module
plane = importlib.import_module("drfemu.nodes._plane")
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle, JoinRequest
class Peer:
    __slots__ = ("id", "lane", "outbox", "cyclon", "gradient", "gossip_gradient", "feeds_gradient", "rejoin_via")
refs = {name: print for name in ("cyclon_round", "gradient_round", "_on_cyclon_shuffle", "_on_cyclon_reply",
                                 "_on_gradient_shuffle", "_on_gradient_reply")}
try:
    plane.Plane(4, (1, 2, 3, 4), 4, 2, 3, 1.0, print)
except RuntimeError as error:
    print("unconfigured:", error)
try:
    plane.peer_methods(Peer, (CyclonReply, CyclonShuffle, GradientShuffle, GradientReply, JoinRequest), refs, None, 8)
except TypeError as error:
    print("refused:", error)
messages = (CyclonShuffle, CyclonReply, GradientShuffle, GradientReply, JoinRequest)
methods = plane.peer_methods(Peer, messages, refs, None, 8)
print(sorted(methods))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    lines = done.stdout.splitlines()
    assert lines[0].startswith("unconfigured:") and "peer_methods first" in lines[0]
    assert lines[1].startswith("refused:") and "expected fields" in lines[1]
    assert "cyclon_round" in lines[2] and "_on_row" in lines[2]


# -- the optional contract ----------------------------------------------------------------------

NO_COMPILER = """
import json, sys
class NoCompiler:  # as an install that found no C compiler: the extensions are not there
    def find_spec(self, name, path=None, target=None):
        if name in set(json.loads(sys.argv[3])):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, NoCompiler())
from drfemu.tools.check import traced_run
from drfemu.workloads.points import build_run_config
from drfemu.nodes.overlay_peer import EXCHANGE_IMPLEMENTATION
from drfemu.nodes.runtime import ENGINE_IMPLEMENTATION
from drfemu.overlay.gradient import RANK_IMPLEMENTATION
from drfemu.protocols.pdgdrf import gini_test_implementation
from drfemu.overlay.cycle import CYCLE_IMPLEMENTATION
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.studies.overlay import run_overlay_config
implementations = (ENGINE_IMPLEMENTATION, EXCHANGE_IMPLEMENTATION, RANK_IMPLEMENTATION, gini_test_implementation(),
                   CYCLE_IMPLEMENTATION)
run = traced_run(json.loads(sys.argv[1]), build_run_config)
cycles = run_overlay_config(OverlayConfig.build(**json.loads(sys.argv[2])))["round_rows"]
print(json.dumps({"implementations": implementations, "digest": run["digest"], "events": run["events"],
                  "cycles": cycles}))
"""


def extension_names() -> list[str]:
    """The extensions setup.py builds, each named once there."""
    import re
    from pathlib import Path

    setup = (Path(__file__).resolve().parents[1] / "setup.py").read_text(encoding="utf-8")
    return re.findall(r'accelerator\("([\w.]+)"', setup)


@pytest.mark.slow
def test_without_the_extensions_every_reference_runs_and_the_run_is_the_same() -> None:
    """The extensions are optional: where none was built (`compiled_module` meets an ImportError)
    every accelerated function is its Python reference, and a run gives the same events as here."""
    import json

    from drfemu.tools.check import traced_run
    from drfemu.workloads.points import build_run_config, canonical_params

    from drfemu.schema.overlay_config import OverlayConfig
    from drfemu.studies.overlay import run_overlay_config

    params = canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "neighbors": 2})
    overlay = {"nodes": 150, "neighbors": 4, "rounds": 8, "perturbations": 2, "mode": "cycle"}
    here = traced_run(params, build_run_config)
    cycles = run_overlay_config(OverlayConfig.build(**overlay))["round_rows"]
    done = subprocess.run([sys.executable, "-c", NO_COMPILER, json.dumps(params), json.dumps(overlay),
                           json.dumps(extension_names())],
                          capture_output=True, text=True, check=True, env={**os.environ, "DRFEMU_PURE_PYTHON": ""})
    alone = json.loads(done.stdout)
    assert alone["implementations"] == ["Python"] * 5
    assert (alone["digest"], alone["events"]) == (here["digest"], here["events"])
    assert alone["cycles"] == cycles
