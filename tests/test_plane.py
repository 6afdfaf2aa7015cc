"""The overlay plane (issue 57, `src/native/_plane.c`, `nodes.plane`): peers whose overlay state the
plane holds, and their messages in flight as rows, change nothing but speed. Whole runs with the
plane and with Python objects give the same events, hash by hash, and the same results, with faults
that close it mid-run; so do runs whose instants the plane delivers itself and runs where the
runtime's deliver does; the plane refuses what it cannot carry with an error of its own, and hands
what it does not take to the runtime."""

from __future__ import annotations

import gc
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drfemu.assembly import overlay_run as overlay_run_module
from drfemu.assembly import run as run_module
from drfemu.assembly.overlay_run import run_overlay
from drfemu.nodes import lane as lane_module
from drfemu.nodes import overlay_peer
from drfemu.nodes import plane as plane_module
from drfemu.nodes import runtime as runtime_module
from drfemu.nodes.network import Network
from drfemu.nodes.overlay_peer import LANE_MARKS, OverlayPeer
from drfemu.nodes.runtime import Runtime
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.tools.check import traced_run
from drfemu.workloads.points import build_run_config, canonical_params
from tests.conftest import compiled_or_skip
from tests.test_overlay_run import without_timing

native = compiled_or_skip("drfemu.nodes._plane")

FAULTS = """
[[event]]
at = "2s"
action = "crash"
servers = 2
duration = "3s"
[[event]]
at = "6s"
action = "latency"
latency = "uniform:1ms:20ms"
duration = "2s"
[[event]]
at = "9s"
action = "partition"
servers = 3
duration = "2s"
"""


class Lanes:
    """`attach_plane` as the assemblies call it, recording each plane it attaches (or, off, none)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.runtimes: list[Runtime] = []

    def __call__(self, runtime: Runtime) -> bool:
        if not self.on:
            return False
        attached = plane_module.attach_plane(runtime)
        if attached:
            self.runtimes.append(runtime)
        return attached


def _traced(monkeypatch: pytest.MonkeyPatch, params: dict[str, Any], on: bool) -> tuple[dict[str, Any], Lanes]:
    lanes = Lanes(on)
    with monkeypatch.context() as patch:
        patch.setattr(run_module, "attach_plane", lanes)
        return traced_run(params, build_run_config), lanes


@pytest.mark.parametrize("protocol, extra", [
    ("pdgdrf", {}), ("dgdrf", {}), ("bdgdrf", {}), ("ddrf-gradient", {}),
    ("dgdrf", {"gradient": "kompics"}),  # its gradient is not the compiled one: no lane
    ("pdgdrf", {"faults": "lane-faults"}),  # a crash, a latency window, a partition: the lane closes and reopens
])
def test_a_run_with_the_plane_has_the_events_of_one_with_python_objects(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, protocol: str, extra: dict[str, str]) -> None:
    if extra.get("faults") == "lane-faults":
        faults = tmp_path / "faults.toml"
        faults.write_text(FAULTS)
        extra = {**extra, "faults": str(faults), "max_time": "20s"}
    params = canonical_params({"protocol": protocol, "machines": 12, "users": 4, "neighbors": 2, **extra})
    materialized: list[int] = []
    materialize = lane_module.materialize

    def counted(lane: Any, *tables: Any) -> None:
        materialized.append(lane.in_flight)
        materialize(lane, *tables)
        assert lane.in_flight == 0

    monkeypatch.setattr(lane_module, "materialize", counted)
    with_lane, lanes = _traced(monkeypatch, params, on=True)
    assert bool(materialized) == ("faults" in extra)  # the faults turned rows in flight into messages
    objects, _ = _traced(monkeypatch, params, on=False)
    assert with_lane["events"] == objects["events"] > 1000
    assert with_lane["hashes"] == objects["hashes"]
    assert with_lane["result"] == objects["result"]
    if extra.get("gradient") == "kompics":
        assert not lanes.runtimes
    else:
        (runtime,) = lanes.runtimes
        lane = runtime._lane
        assert lane is not None and sum(lane.carried) > 0


def test_an_overlay_run_with_the_plane_gives_the_result_of_one_without(monkeypatch: pytest.MonkeyPatch) -> None:
    config = OverlayConfig.build(nodes=200, neighbors=5, rounds=30, observe_every=10, seed=3)
    with_lane = run_overlay(config)
    monkeypatch.setattr(overlay_run_module, "attach_plane", Lanes(on=False))
    objects = run_overlay(config)
    assert without_timing(with_lane) == without_timing(objects)
    assert with_lane["bytes"] and with_lane["messages"]


class Roomy(OverlayPeer):
    """A peer with an instance dict: `getattr` may find an instance's own DISPATCH first."""


def _peers(n: int, roomy: int = -1) -> tuple[Runtime, list[OverlayPeer]]:
    peers = [(Roomy if i == roomy else OverlayPeer)(i, 3, 4, 2, random.Random(i), utility=float(i)) for i in range(n)]
    overlay_peer.bootstrap(peers, [float(i) for i in range(n)], seed=1)
    return Runtime(Network(), peers), peers


def test_a_round_sends_marks_whose_rows_render_as_the_messages() -> None:
    runtime, peers = _peers(6)
    assert plane_module.attach_plane(runtime)
    lane = runtime._lane
    assert lane is not None and lane.open
    peers[0].cyclon_round(1.0)
    peers[0].gradient_round(1.0)
    sends = peers[0].take_outbox()
    assert [type(msg) for _, msg in sends] == [type(LANE_MARKS[0]), type(LANE_MARKS[2])]
    assert lane.in_flight == 2
    rendered = lane.render(sends)
    assert [type(msg) for _, msg in rendered] == [CyclonShuffle, GradientShuffle]
    assert rendered[0][1].entries[0][1] == 0  # the sender's own descriptor first
    assert lane.in_flight == 2  # rendering takes nothing
    shuffle = lane.message(sends[0][0], sends[0][1])
    assert shuffle == rendered[0][1] and lane.in_flight == 1


def test_a_mark_without_its_row_is_an_internal_error() -> None:
    runtime, peers = _peers(4)
    assert plane_module.attach_plane(runtime)
    lane = runtime._lane
    with pytest.raises(RuntimeError, match="out of step with actor 1"):
        lane.message(1, LANE_MARKS[1])
    with pytest.raises(RuntimeError, match="out of step with actor 2"):
        peers[2]._on_row(LANE_MARKS[0], 1.0)
    loose = OverlayPeer(5, 3, 4, 2, __import__("random").Random(5))
    with pytest.raises(RuntimeError, match="outside the overlay plane"):
        loose._on_row(LANE_MARKS[0], 1.0)


@pytest.mark.parametrize("args, error", [
    ((-1, LANE_MARKS), ValueError),
    ((4, LANE_MARKS[:3]), ValueError),
    ((4, (LANE_MARKS[0],) * 4), ValueError),
    ((4, list(LANE_MARKS)), TypeError),
    (("4", LANE_MARKS), TypeError),
    ((2**62, LANE_MARKS), (ValueError, MemoryError)),
])
def test_the_plane_refuses_what_it_cannot_carry(args: tuple[Any, ...], error: Any) -> None:
    with pytest.raises(error):
        native.Plane(*args, 4, 2, 3, 1.0, plane_module.evict)


@pytest.mark.parametrize("call", [
    lambda lane: lane.message(9, LANE_MARKS[0]),
    lambda lane: lane.message("0", LANE_MARKS[0]),
    lambda lane: lane.message(0, object()),
    lambda lane: lane.render(((0, LANE_MARKS[0]),)),
    lambda lane: lane.render([(0, LANE_MARKS[0])]),
    lambda lane: lane.message(0),
])
def test_the_plane_answers_bad_calls_with_errors(call: Any) -> None:
    lane = native.Plane(3, LANE_MARKS, 4, 2, 3, 1.0, plane_module.evict)
    with pytest.raises((TypeError, ValueError, RuntimeError)):
        call(lane)


def test_a_plane_in_a_cycle_is_collected() -> None:
    runtime, peers = _peers(5)
    assert plane_module.attach_plane(runtime)
    for peer in peers:
        peer.cyclon_round(1.0)
    assert runtime._lane is not None and runtime._lane.in_flight == 5
    del runtime, peers
    gc.collect()


def test_the_marks_count_as_the_messages_they_stand_for() -> None:
    assert [mark.STANDS_FOR for mark in LANE_MARKS] == [CyclonShuffle, CyclonReply, GradientShuffle, GradientReply]
    assert len({type(mark) for mark in LANE_MARKS}) == 4


class Declining:
    """A lane that never delivers an instant itself: the runtime's own `deliver` gets its marks."""

    def __init__(self, lane: Any) -> None:
        self.__dict__["lane"] = lane

    def deliver(self, *args: Any) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lane, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.lane, name, value)


@pytest.mark.parametrize("protocol, faults", [
    ("pdgdrf", False), ("dgdrf", False), ("bdgdrf", False), ("ddrf-gradient", False), ("pdgdrf", True),
])
def test_the_plane_delivers_an_instant_that_carries_marks_as_the_runtime_would(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, protocol: str, faults: bool) -> None:
    extra: dict[str, Any] = {}
    if faults:
        (tmp_path / "faults.toml").write_text(FAULTS)
        extra = {"faults": str(tmp_path / "faults.toml"), "max_time": "20s"}
    params = canonical_params({"protocol": protocol, "machines": 12, "users": 4, "neighbors": 2, **extra})
    delivered: list[bool] = []
    fused, _ = _traced(monkeypatch, params, on=True)
    use_lane = Runtime.use_lane

    def declining(runtime: Runtime, lane: Any, *rest: Any) -> None:
        use_lane(runtime, lane, *rest)
        runtime._lane = Declining(lane)
        delivered.append(True)

    monkeypatch.setattr(Runtime, "use_lane", declining)
    plain, _ = _traced(monkeypatch, params, on=True)
    assert delivered
    assert fused["events"] == plain["events"] > 1000
    assert fused["hashes"] == plain["hashes"]
    assert fused["result"] == plain["result"]


class ChangesTheNetwork(random.Random):
    """A Cyclon draw (not the stock one, so the reference draws with it) that crashes actor `down`
    on the network at its first draw: a network change in the middle of a delivery phase."""

    def __init__(self, state: Any, runtime: Runtime, down: int) -> None:
        super().__init__()
        self.setstate(state)
        self.runtime, self.down = runtime, down

    def random(self) -> float:
        if self.down >= 0:
            self.runtime.network.set_down(self.down, True)
            self.down = -1
        return super().random()


def _an_instant_of_shuffles(fused: bool, hostile: bool, roomy: int = -1) -> tuple[Any, ...]:
    """Eight peers start a Cyclon shuffle each; their marks are delivered at one instant by the lane
    (`fused`) or by the runtime's deliver. With `hostile`, the first actor woken with one mark and
    later ones after it changes the network as it answers; with `roomy`, that peer's class has an
    instance dict (the lane hands its messages to the runtime's deliver)."""
    runtime, peers = _peers(8, roomy)
    heard: list[int] = []
    if roomy >= 0:  # its own DISPATCH, which only getattr finds, counts what it handles
        row_handler = OverlayPeer.DISPATCH[type(LANE_MARKS[0])]

        def counted(actor: OverlayPeer, mark: Any, now: float) -> None:
            heard.append(actor.id)
            row_handler(actor, mark, now)

        peers[roomy].DISPATCH = {**OverlayPeer.DISPATCH, type(LANE_MARKS[0]): counted}
    assert plane_module.attach_plane(runtime)
    lane = runtime._lane
    assert lane is not None
    for peer in peers:
        peer.cyclon_round(1.0)
    deliveries = [item for peer in peers for item in peer.take_outbox()]
    woken = list(dict.fromkeys(d for d, _ in deliveries))
    if hostile:
        x = next(d for d in woken[:-1] if sum(1 for dst, _ in deliveries if dst == d) == 1)
        peers[x].cyclon.rng = ChangesTheNetwork(peers[x].cyclon.rng.getstate(), runtime, woken[-1] ^ 1)
    batch: list[tuple[int, Any]] = []
    args = (deliveries, runtime._mailboxes, runtime.actors, runtime._inline_drain, 1.001, batch)
    if fused:
        assert lane.deliver(*args)
    else:
        runtime_module.deliver(*args, runtime._flush)
    settled = [type(msg).__name__ for _, msg in deliveries]
    return (lane.render(batch) if lane.open else batch, [list(peer.cyclon.entries.items()) for peer in peers],
            lane.in_flight, lane.open, heard, settled)


@pytest.mark.parametrize("hostile, roomy", [(False, -1), (True, -1), (False, 5), (True, 5)])
def test_the_plane_delivering_an_instant_does_what_the_runtime_would(hostile: bool, roomy: int) -> None:
    fused = _an_instant_of_shuffles(True, hostile, roomy)
    plain = _an_instant_of_shuffles(False, hostile, roomy)
    assert fused[:5] == plain[:5]
    assert fused[0]  # replies were sent
    assert bool(fused[4]) == (roomy >= 0)  # the peer with a DISPATCH of its own was woken through it
    if hostile and roomy < 0:  # the marks not yet handled became messages where the lane was delivering
        assert "CyclonShuffle" in fused[5] and not fused[3]


@pytest.mark.parametrize("spoil", [
    lambda args: ((0, LANE_MARKS[0]), *args[1:]),  # deliveries not a list
    lambda args: ([(0, object())], *args[1:]),  # not a mark
    lambda args: ([(9, LANE_MARKS[0])], *args[1:]),  # not an actor of the lane
    lambda args: ([], *args[1:]),  # nothing to deliver
    lambda args: (*args[:5], None),  # no batch: the latency is not fixed
    lambda args: (args[0], [[object()] for _ in args[1]], *args[2:]),  # a mailbox not empty
])
def test_the_plane_declines_an_instant_it_does_not_take(spoil: Any) -> None:
    runtime, peers = _peers(4)
    assert plane_module.attach_plane(runtime)
    lane = runtime._lane
    peers[0].cyclon_round(1.0)
    sends = peers[0].take_outbox()
    args = spoil((sends, runtime._mailboxes, runtime.actors, runtime._inline_drain, 1.0, []))
    assert lane.deliver(*args) is False
    assert lane.in_flight == 1
    with pytest.raises(TypeError):
        lane.deliver(*args[:5])


@pytest.mark.parametrize("spoil", [
    lambda actors, drains: actors.__setitem__(slice(None), [object()] * len(actors)),  # not actors at all
    lambda actors, drains: drains.__setitem__(slice(None), [False] * len(drains)),  # drains of their own
    lambda actors, drains: drains.__setitem__(slice(None), []),  # a list too short
    lambda actors, drains: setattr(actors[0], "outbox", ()),  # an outbox that is not a list
])
def test_the_plane_hands_what_it_cannot_wake_to_the_runtime(spoil: Any) -> None:
    outcomes = []
    for fused in (True, False):
        runtime, peers = _peers(4)
        assert plane_module.attach_plane(runtime)
        for peer in peers:
            peer.cyclon_round(1.0)
        deliveries = [item for peer in peers for item in peer.take_outbox()]
        spoil(runtime.actors, runtime._inline_drain)
        args = (deliveries, runtime._mailboxes, runtime.actors, runtime._inline_drain, 1.001, [])
        try:
            done = runtime._lane.deliver(*args) if fused else runtime_module.deliver(*args, runtime._flush)
            outcomes.append(("done", fused and done, len(args[5])))
        except Exception as error:  # noqa: BLE001 - the two must fail alike
            outcomes.append((type(error).__name__, str(error)))
    fused_outcome, plain_outcome = outcomes
    assert fused_outcome[0] == plain_outcome[0] and fused_outcome[-1] == plain_outcome[-1]


# -- an adopted peer does what its reference does, step by step -------------------------------------

def adopted(peer: OverlayPeer, n: int = 16) -> Any:
    """A plane of `n` actors holding `peer`'s overlay state (True if it could; the plane)."""
    plane = native.Plane(n, LANE_MARKS, peer.cyclon.size, peer.cyclon.length, peer.gradient.size,
                         float(peer.gradient.max_age), plane_module.evict)
    peer.lane = plane
    return plane_module.adopt(plane, peer), plane


def peer_state(peer: OverlayPeer) -> tuple[Any, ...]:
    """What the reference keeps of a peer, read through its views (a plane's or the objects')."""
    cyclon, gradient = peer.cyclon, peer.gradient
    return (list(cyclon.entries.items()), cyclon._partner, tuple(cyclon._sent), list(gradient._view),
            list(gradient._pending), gradient._own, gradient._clock, gradient._stale, gradient.utility, peer.outbox,
            peer.cyclon_exchanges, peer.gradient_exchanges, cyclon.rng.getstate(), cyclon.neighbors(),
            cyclon.samples())


plain_descriptors = st.lists(st.tuples(st.sampled_from([float("-inf"), 0.0, -0.0, 0.25, 0.5, 1.0]), st.integers(0, 9),
                                       st.sampled_from([0.0, 1.0, 2.0, 3.0])), min_size=1, max_size=7).map(tuple)
odd_descriptors = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1, float("nan")]), st.integers(0, 9),
                                     st.sampled_from([0.0, 2.0, 3, float("nan")])), min_size=1, max_size=6).map(tuple)
any_descriptors = st.one_of(plain_descriptors, plain_descriptors, odd_descriptors)
program = st.lists(st.one_of(
    st.tuples(st.just("cyclon_round"), st.floats(0, 3, allow_nan=False)),
    st.tuples(st.just("gradient_round"), st.floats(0, 3, allow_nan=False)),
    st.tuples(st.just("cyclon_shuffle"), any_descriptors),
    st.tuples(st.just("cyclon_reply"), st.integers(-1, 9), any_descriptors),
    st.tuples(st.just("partner_reply"), plain_descriptors),  # from the partner of the exchange under way
    st.tuples(st.just("gradient_shuffle"), any_descriptors),
    st.tuples(st.just("gradient_reply"), any_descriptors),
    st.tuples(st.just("utility"), st.sampled_from([0.0, 0.5, 2.0, -0.0, float("-inf"), 1, float("nan")])),
    st.tuples(st.just("assign_utility"), st.sampled_from([0.0, 0.75, 3])),
    st.tuples(st.just("offer"), any_descriptors),
    st.tuples(st.just("forget"), st.sampled_from([0, 1, 2, 3, 5, 9, 1.0])),
    st.tuples(st.just("bootstrap"), any_descriptors),
    st.tuples(st.just("reach"), st.integers(0, 9)),
    st.tuples(st.just("read"), st.sampled_from(["view", "centre", "strict", "peek", "members", "validation",
                                                "acknowledges", "descriptor", "entries", "pending"])),
    st.tuples(st.just("gossip"), st.booleans()),
    st.tuples(st.just("rejoin"), st.integers(-1, 3)),
    st.tuples(st.just("resize"), st.sampled_from(["cyclon size", "cyclon length", "gradient size", "gradient max_age"]),
              st.integers(1, 4)),
    st.tuples(st.just("step"), st.sampled_from(["initiate", "answer", "complete", "g_initiate", "g_answer",
                                                "g_complete"])),
), max_size=40)

_HANDLERS = {"cyclon_shuffle": ("_on_cyclon_shuffle", CyclonShuffle), "gradient_shuffle": ("_on_gradient_shuffle",
             GradientShuffle), "gradient_reply": ("_on_gradient_reply", GradientReply)}


def _run_step(peer: OverlayPeer, step: tuple[Any, ...], now: float, compiled: bool) -> Any:
    """One step of a program on `peer`, through the C methods (`compiled`) or the Python references."""
    kind = step[0]

    def method(name: str) -> Any:
        return getattr(OverlayPeer, name) if compiled else overlay_peer.PYTHON_EXCHANGES[name]

    c, g = peer.cyclon, peer.gradient
    if kind in ("cyclon_round", "gradient_round"):
        return method(kind)(peer, now)
    if kind in _HANDLERS:
        name, cls = _HANDLERS[kind]
        return method(name)(peer, cls(step[1]), now)
    if kind == "cyclon_reply":
        return method("_on_cyclon_reply")(peer, CyclonReply(step[1], step[2]), now)
    if kind == "partner_reply":
        return method("_on_cyclon_reply")(peer, CyclonReply(c._partner, step[1]), now)
    if kind == "utility":
        return g.set_utility(step[1])
    if kind == "assign_utility":
        g.utility = step[1]
        return None
    if kind == "offer":
        return g.offer(list(step[1]))
    if kind == "forget":
        return peer.forget_peer(step[1])
    if kind == "bootstrap":
        return peer.join(list(step[1]))
    if kind == "reach":
        return c.reach(step[1], g.descriptor(now))
    if kind == "gossip":
        peer.gossip_gradient = step[1]
        return None
    if kind == "rejoin":
        peer.rejoin_via = step[1]
        return None
    if kind == "resize":  # a size set through the view: the reference's, which the view then forwards to
        owner, name = step[1].split()
        setattr(c if owner == "cyclon" else g, name, float(step[2]) if name == "max_age" else step[2])
        return (c.size, c.length, c.me, g.size, g.me, g.max_age)
    if kind == "step":
        return {"initiate": lambda: c.initiate(g.descriptor(now)), "answer": lambda: c.answer(CyclonShuffle(
            ((0.5, 7, now), (0.25, 8, now)))), "complete": lambda: c.complete(CyclonReply(7, ((0.5, 6, now),))),
                "g_initiate": lambda: g.initiate(now), "g_answer": lambda: g.answer(GradientShuffle(((0.5, 6, now),)),
                                                                                     now),
                "g_complete": lambda: g.complete(GradientReply(((1.0, 5, now),)))}[step[1]]()
    read = step[1]
    return {"view": lambda: list(g.view), "centre": g.believes_centre, "strict": lambda: g.believes_centre(True),
            "peek": g.peek, "members": g.members, "validation": lambda: g.validation_set() if g.view else None,
            "acknowledges": lambda: g.acknowledges(frozenset({1, 2, 3})), "descriptor": lambda: g.descriptor(now),
            "entries": lambda: list(c.entries.items()), "pending": c.pending}[read]()


@given(program, st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**32), st.sampled_from([2.0, float("inf")]))
def test_an_adopted_peer_does_what_its_reference_does(steps: list[tuple[Any, ...]], view: int, cyclon_view: int,
                                                      seed: int, max_age: float) -> None:
    """Two peers in the same state: one adopted by a plane (closed: its sends are messages) and
    driven by the C methods and its views, the other by the Python references on its objects. After
    every step: the same result or error, views, pending candidates, draws and outboxes. Odd input (an
    int or NaN in a descriptor or a utility, a direct call of an exchange step) evicts the adopted peer
    first, and from then on its views forward to the objects."""
    peers = []
    for _ in range(2):
        peer = OverlayPeer(3, view, cyclon_view, max(1, cyclon_view // 2), random.Random(seed), utility=0.5,
                           max_age=max_age)
        peer.join([(0.1 * p, p, 0.0) for p in range(9)])
        peers.append(peer)
    compiled, python = peers
    held, plane = adopted(compiled)
    assert held and plane.holds(compiled)
    now = 0.0
    for step in steps:
        if step[0] in ("cyclon_round", "gradient_round"):
            now = max(now, step[1])
        outcomes = []
        for peer, is_compiled in ((compiled, True), (python, False)):
            try:
                outcomes.append(("value", repr(_run_step(peer, step, now, is_compiled))))
            except Exception as error:  # noqa: BLE001 - the two must fail alike
                outcomes.append(("raised", type(error).__name__, str(error)))
        assert outcomes[0] == outcomes[1], step
        assert peer_state(compiled) == peer_state(python), step


@given(st.lists(st.sampled_from(["cyclon_round", "gradient_round"]), min_size=1, max_size=12), st.integers(0, 2**16))
def test_an_open_plane_sends_rows_that_stand_for_the_reference_messages(rounds: list[str], seed: int) -> None:
    """Open, an adopted peer's rounds send marks whose rows are the messages its reference sends."""
    peers = []
    for _ in range(2):
        peer = OverlayPeer(3, 3, 6, 3, random.Random(seed), utility=0.5)
        peer.join([(0.1 * p, p, 0.0) for p in range(9)])
        peers.append(peer)
    compiled, python = peers
    held, plane = adopted(compiled, n=10)
    plane.open = True
    for at, kind in enumerate(rounds):
        getattr(OverlayPeer, kind)(compiled, float(at))
        overlay_peer.PYTHON_EXCHANGES[kind](python, float(at))
        sent = [(dst, plane.message(dst, mark)) for dst, mark in compiled.take_outbox()]
        assert sent == python.take_outbox()
    assert plane.in_flight == 0 and sum(plane.carried) > 0


def test_a_plane_adopts_only_what_it_can_hold() -> None:
    def peer(**changes: Any) -> OverlayPeer:
        made = OverlayPeer(2, 3, 6, 3, random.Random(1), utility=0.5, max_age=changes.pop("max_age", 2.0))
        made.join([(0.1 * p, p, 0.0) for p in range(9)])
        for name, value in changes.items():
            owner, attribute = name.split("__")
            setattr(getattr(made, owner), attribute, value)
        return made

    plane = native.Plane(8, LANE_MARKS, 6, 3, 3, 2.0, plane_module.evict)
    for spoilt in (peer(max_age=3.0), peer(max_age=float("inf")), peer(cyclon__rng=random.Random(1)),
                   peer(gradient__utility=1), peer(gradient___clock=1), peer(gradient___view=[(0.5, 1, 1)])):
        spoilt.lane = plane
        assert not plane_module.adopt(plane, spoilt) and type(spoilt.cyclon).__name__ == "Cyclon"
    fine = peer()
    fine.lane = plane
    assert plane_module.adopt(plane, fine) and plane.adopted == 1
    stranger = peer()
    with pytest.raises(ValueError, match="not a peer the overlay plane holds"):
        plane.view(5)
    assert not plane.holds(stranger)
    view = fine.gradient
    plane_module.evict(fine)
    assert plane.adopted == 0 and type(fine.gradient).__name__ == "Gradient" and not plane.holds(fine)
    assert view.view == fine.gradient.view and view.utility == 0.5  # the old view forwards to the object


def test_a_node_that_takes_a_crashed_ones_place_leaves_the_old_its_state() -> None:
    """A restarted node is adopted in the place of the crashed one, which keeps what it had: its
    views as they were, its exchanges counted."""
    old = OverlayPeer(2, 3, 6, 3, random.Random(1), utility=0.5)
    old.join([(0.1 * p, p, 0.0) for p in range(9)])
    held, plane = adopted(old, n=10)
    assert held
    old.cyclon_round(1.0)
    old.gradient_round(1.0)
    before = (list(old.cyclon.entries.items()), list(old.gradient.view), old.cyclon_exchanges, old.gradient_exchanges)
    new = OverlayPeer(2, 3, 6, 3, random.Random(2), utility=0.25)
    new.join([(0.2 * p, p, 0.0) for p in range(9)])
    new.lane = plane
    assert plane_module.adopt(plane, new) and plane.holds(new) and not plane.holds(old)
    assert (list(old.cyclon.entries.items()), list(old.gradient.view), old.cyclon_exchanges,
            old.gradient_exchanges) == before
    assert before[2] == before[3] == 1 and new.cyclon_exchanges == 0
