"""The C accelerators (`src/native/_engine.c`, `src/native/_cyclon.c`, `src/native/_rank.c`,
`src/native/_gini.c`) change nothing but speed: each engine loop agrees with its Python reference
on arbitrary inputs (the merges are checked so in `test_cyclon.py` and `test_gradient.py`, the
Gini test in `test_gini_c.py`), and whole runs with every accelerator swapped for its reference
give the same events, one hash per event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drfemu.kernel.messages import handles, message
from drfemu.nodes import runtime as runtime_module
from drfemu.nodes.actor import Actor, UnhandledMessage, send_python
from drfemu.nodes.network import count_items_python, count_types_python
from drfemu.nodes.overlay_peer import EXCHANGE_IMPLEMENTATION, PYTHON_EXCHANGES, OverlayPeer
from drfemu.nodes.runtime import deliver_python, fire_each_python
from drfemu.nodes.server import server_class
from drfemu.overlay.messages import CyclonShuffle, GradientReply
from drfemu.protocols.registry import PROTOCOLS
from drfemu.tools.check import traced_run
from drfemu.workloads.points import build_run_config, canonical_params
from tests.conftest import compiled_or_skip

engine = compiled_or_skip("drfemu.nodes._engine")


@message
class Hop:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


@message
class Skip:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


@message
class Stray:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


@message
class Carrier:
    items: tuple[int, ...]
    WIRE: ClassVar[tuple[int, int, str, int, int]] = (0, 0, "items", 1, 0)


class Recorder(Actor):
    """Logs every message it handles and answers some, as a node would."""

    __slots__ = ("log",)

    def __init__(self, actor_id: int, log: list[tuple[int, str, int]]) -> None:
        super().__init__(actor_id)
        self.log = log

    @handles(Hop)
    def on_hop(self, msg: Hop, now: float) -> None:
        self.log.append((self.id, "hop", msg.tag))
        if msg.tag % 3 == 0:
            self.send(msg.tag % 5, Skip(msg.tag))

    @handles(Skip)
    def on_skip(self, msg: Skip, now: float) -> None:
        self.log.append((self.id, "skip", msg.tag))


class BatchRecorder(Recorder):
    """Treats its mailbox as one batch (the runtime must call its `drain`)."""

    __slots__ = ()

    def drain(self, messages: list[Any], now: float) -> None:
        self.log.append((self.id, "batch", len(messages)))


MESSAGE_TYPES = [Hop, Skip, Stray]
sends = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([Hop, Skip]), st.integers(0, 99)), max_size=60)


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(MESSAGE_TYPES), st.integers(0, 9)), max_size=80))
def test_count_types_agrees_with_its_python_reference(items: list[tuple[int, type, int]]) -> None:
    out = [(dst, kind(tag)) for dst, kind, tag in items]
    counted = engine.count_types(out)
    assert counted == count_types_python(out)
    assert list(counted) == list(count_types_python(out))  # types in the order of their first message


@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.sampled_from([Hop, Stray]),
                                                     st.lists(st.integers(), max_size=5))), max_size=40))
def test_count_items_agrees_with_its_python_reference(items: list[tuple[int, Any]]) -> None:
    out = [(dst, kind(7) if isinstance(kind, type) else Carrier(tuple(kind))) for dst, kind in items]
    assert engine.count_items(out, Carrier, "items") == count_items_python(out, Carrier, "items")
    assert engine.count_items(out, Skip, "tag") == 0  # a type absent from the batch carries nothing


class Ticker(Recorder):
    """Sends `tag` messages per round (a round of a periodic driver)."""

    __slots__ = ("tag",)

    def round(self, now: float) -> None:
        for k in range(self.tag):
            self.send(k, Hop(self.id * 10 + k))


@given(st.lists(st.integers(0, 3), max_size=6), st.booleans())
def test_fire_each_agrees_with_its_python_reference(sends_per_actor: list[int], fixed: bool) -> None:
    def fire(implementation: Any) -> tuple[list[Any], list[int]]:
        actors = [Ticker(i, []) for i in range(len(sends_per_actor))]
        for actor, tag in zip(actors, sends_per_actor):
            actor.tag = tag
        flushed: list[int] = []

        def flush(actor: Actor) -> None:
            flushed.append(actor.id)
            actor.outbox = []

        batch: list[Any] | None = [] if fixed else None
        implementation(actors, Ticker.round, 2.0, batch, flush)
        assert not any(actor.outbox for actor in actors)
        return batch if batch is not None else [], flushed

    assert fire(engine.fire_each) == fire(fire_each_python)


class Truth:
    """An `idle_tick` that is not a bool: its truth is Python's (`__bool__`), or an error."""

    def __init__(self, value: bool | None) -> None:
        self.value = value

    def __bool__(self) -> bool:
        if self.value is None:
            raise ValueError("no truth")
        return self.value


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([False, True, 0, 1, "", "x", Truth(True), Truth(False)])),
                max_size=6), st.booleans(), st.booleans())
def test_fire_each_skips_idle_actors_as_its_python_reference(actors_spec: list[tuple[int, Any]], skip: bool,
                                                             fixed: bool) -> None:
    """With `skip_idle` an actor whose `idle_tick` is true is not called (its outbox stays as it is);
    without it, every actor is called, whatever its flag."""
    def fire(implementation: Any) -> tuple[list[Any], list[int]]:
        actors = [Ticker(i, []) for i in range(len(actors_spec))]
        for actor, (tag, idle) in zip(actors, actors_spec):
            actor.tag, actor.idle_tick = tag, idle
        flushed: list[int] = []

        def flush(actor: Actor) -> None:
            flushed.append(actor.id)
            actor.outbox = []

        batch: list[Any] | None = [] if fixed else None
        implementation(actors, Ticker.round, 2.0, batch, flush, skip)
        return batch if batch is not None else [], flushed

    expected = fire(fire_each_python)
    assert fire(engine.fire_each) == expected
    called = {hop.tag // 10 for _, hop in expected[0]} | set(expected[1])
    assert called == {i for i, (tag, idle) in enumerate(actors_spec) if tag and not (skip and idle)}


@pytest.mark.parametrize("implementation", [engine.fire_each, fire_each_python], ids=["C", "Python"])
def test_an_idle_tick_that_has_no_truth_raises_its_error(implementation: Any) -> None:
    actor = Ticker(0, [])
    actor.tag, actor.idle_tick = 1, Truth(None)
    with pytest.raises(ValueError, match="no truth"):
        implementation([actor], Ticker.round, 1.0, [], lambda a: None, True)


def _deliver(implementation: Any, items: list[tuple[int, type, int]], batch_actors: set[int],
             fixed: bool) -> tuple[list[Any], list[Any], list[int]]:
    log: list[tuple[int, str, int]] = []
    actors: list[Actor] = [(BatchRecorder if i in batch_actors else Recorder)(i, log) for i in range(5)]
    flushed: list[int] = []

    def flush(actor: Actor) -> None:
        flushed.append(actor.id)
        actor.outbox = []

    batch: list[Any] | None = [] if fixed else None
    implementation([(dst, kind(tag)) for dst, kind, tag in items], [[] for _ in actors], actors,
                   [i not in batch_actors for i in range(5)], 1.5, batch, flush)
    return log, batch if batch is not None else [], flushed


@given(sends, st.sets(st.integers(0, 4), max_size=2), st.booleans())
def test_deliver_agrees_with_its_python_reference(items: list[tuple[int, type, int]], batch_actors: set[int],
                                                  fixed: bool) -> None:
    assert _deliver(engine.deliver, items, batch_actors, fixed) == _deliver(deliver_python, items, batch_actors,
                                                                           fixed)


@pytest.mark.parametrize("implementation", [engine.deliver, deliver_python], ids=["C", "python"])
def test_a_message_without_a_handler_raises_unhandled_message(implementation: Any) -> None:
    with pytest.raises(UnhandledMessage, match="Recorder has no handler for Stray"):
        _deliver(implementation, [(1, Hop, 1), (1, Stray, 2)], set(), True)


def test_send_in_c_appends_exactly_what_send_in_python_does() -> None:
    compiled, python = Recorder(0, []), Recorder(0, [])
    for dst, msg in [(3, Hop(1)), (0, Skip(2)), (3, Hop(1))]:
        Actor.send(compiled, dst, msg)
        send_python(python, dst, msg)
    assert compiled.outbox == python.outbox
    with pytest.raises(TypeError, match="takes 2 arguments"):
        compiled.send(1)  # type: ignore[call-arg]


FAULTS = str(Path(__file__).resolve().parents[1] / "configs" / "faults" / "check-faults.toml")


PURE_PYTHON_RUN = """
import json, sys
from drfemu.tools.check import traced_run
from drfemu.workloads.points import build_run_config
from drfemu.nodes.server import server_class
from drfemu.nodes.overlay_peer import EXCHANGE_IMPLEMENTATION, PYTHON_EXCHANGES, OverlayPeer
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle
from drfemu.nodes.runtime import ENGINE_IMPLEMENTATION
from drfemu.overlay.gradient import RANK_IMPLEMENTATION
assert (ENGINE_IMPLEMENTATION, EXCHANGE_IMPLEMENTATION, RANK_IMPLEMENTATION) == ("Python",) * 3
run = traced_run(json.loads(sys.argv[1]), build_run_config)
print(json.dumps({"events": run["events"], "digest": run["digest"], "result": run["result"]}))
"""


@pytest.mark.parametrize("protocol, extra", [
    ("drf", {}), ("probe", {"latency": "uniform:1ms:3ms"}), ("pdgdrf", {}), ("dgdrf", {}), ("bdgdrf", {}),
    ("dgdrf", {"gradient": "kompics"}),  # the C exchanges fall back to the Kompics gradient's Python
    ("pdgdrf", {"faults": FAULTS, "max_time": "300s"}),  # loss, crashes and restarts, churn
    ("ddrf-random", {}), ("ddrf-gradient", {"faults": FAULTS, "max_time": "300s"}),  # polls answered and kept
])
def test_a_run_with_every_python_reference_has_the_same_events(protocol: str, extra: dict[str, str]) -> None:
    """The same run in this process (every accelerator in C) and in one with DRFEMU_PURE_PYTHON
    set (every Python reference): the same events, hash by hash, and the same result."""
    assert EXCHANGE_IMPLEMENTATION == runtime_module.ENGINE_IMPLEMENTATION == "C"
    params = canonical_params({"protocol": protocol, "machines": 12, "users": 4, "neighbors": 2, **extra})
    compiled = traced_run(params, build_run_config)
    env = {**os.environ, "DRFEMU_PURE_PYTHON": "1"}
    done = subprocess.run([sys.executable, "-c", PURE_PYTHON_RUN, json.dumps(params)], env=env, capture_output=True,
                          text=True, check=True)
    python = json.loads(done.stdout)
    assert python["events"] == compiled["events"] > 1000
    assert python["digest"] == compiled["digest"]
    assert python["result"] == json.loads(json.dumps(compiled["result"]))


# The C exchanges against their references, peer by peer, on any program: tests/test_plane.py (a peer
# the overlay plane holds) and tests/test_accelerators_hostile.py (hostile messages and draws).


def test_the_c_exchanges_are_in_the_dispatch_of_every_server_class() -> None:
    rules = [spec.server_rule for spec in PROTOCOLS.values() if spec.server_rule is not None]
    assert rules
    for rule in rules:
        dispatch = server_class(rule).DISPATCH
        assert dispatch[CyclonShuffle] is OverlayPeer._on_cyclon_shuffle is not PYTHON_EXCHANGES["_on_cyclon_shuffle"]
        assert dispatch[GradientReply] is OverlayPeer._on_gradient_reply
