"""The cycle-driven overlay (`overlay.cycle`): the C engine leaves exactly the arrays its Python
reference leaves, on valid input and on any other (where it hands the call to the reference);
the engine keeps Cyclon's and the gradient's invariants; a run through `drfemu overlay --mode
cycle` is deterministic and reports the traffic its exchanges would send."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.assembly.overlay_cycle import gradient_turns
from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.overlay.cycle import COUNTERS, CycleOverlay, SplitMix64, bootstrap_python, run_cycles_python
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.studies.overlay import run_overlay_config

_cycle = compiled_module("drfemu.overlay._cycle")
needs_c = pytest.mark.skipif(_cycle is None, reason=f"drfemu.overlay._cycle: {SKIP_REASON}")
ARRAYS = ("utility", "cyclon_node", "cyclon_utility", "cyclon_stamp", "cyclon_length", "gradient_node",
          "gradient_utility", "gradient_stamp", "gradient_length", "answer_node", "answer_utility", "answer_stamp",
          "answer_length", "rng", "counters", "order")


def overlay(n: int, c: int, length: int, p: int, max_age: float, seed: int, utilities: list[float]) -> CycleOverlay:
    made = CycleOverlay(n, c, length, p, max_age, seed)
    made.utility[:] = utilities
    return made


def state(o: CycleOverlay) -> list[np.ndarray]:
    return [getattr(o, name).copy() for name in ARRAYS]


def same(a: CycleOverlay, b: CycleOverlay) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(state(a), state(b)))


def test_splitmix64_is_the_published_generator() -> None:
    """The first outputs for seed 0 (the reference values of Vigna's splitmix64.c)."""
    rng = SplitMix64(np.array([0], dtype=np.uint64))
    assert [rng.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


@st.composite
def overlays(draw: st.DrawFn) -> tuple[CycleOverlay, list[int]]:
    n = draw(st.integers(2, 40))
    c = draw(st.integers(1, n - 1))
    length = draw(st.integers(1, c))
    p = draw(st.integers(1, n - 1))
    max_age = draw(st.sampled_from([0.5, 1.0, 3.0, 20.0, float("inf")]))
    utility = st.sampled_from([float("-inf"), -1.0, -0.5, -0.25, 0.0])
    utilities = draw(st.lists(utility, min_size=n, max_size=n))
    turns = draw(st.lists(st.integers(0, 3), min_size=1, max_size=6))
    return overlay(n, c, length, p, max_age, draw(st.integers(0, 2**64 - 1)), utilities), turns


def _copy(o: CycleOverlay) -> CycleOverlay:
    twin = CycleOverlay(o.n, o.cyclon_view, o.shuffle_length, o.view_size, o.max_age, o.seed_word)
    for name in ARRAYS:
        getattr(twin, name)[...] = getattr(o, name)
    return twin


@needs_c
@settings(max_examples=200, deadline=None)
@given(overlays())
def test_the_c_engine_leaves_the_arrays_its_reference_leaves(case: tuple[CycleOverlay, list[int]]) -> None:
    fast, turns = case
    slow = _copy(fast)
    _cycle.bootstrap(fast)
    bootstrap_python(slow)
    assert same(fast, slow)
    _cycle.run_cycles(fast, 1, turns)
    run_cycles_python(slow, 1, turns)
    assert same(fast, slow)
    for o in (fast, slow):  # a utility changes, as a perturbation changes the centre's: stale copies differ
        o.utility[0] -= 0.75
    _cycle.run_cycles(fast, 1 + len(turns), turns)
    run_cycles_python(slow, 1 + len(turns), turns)
    assert same(fast, slow)


@settings(max_examples=100, deadline=None)
@given(overlays())
def test_views_keep_their_invariants(case: tuple[CycleOverlay, list[int]]) -> None:
    """Distinct nodes, never the node itself, within capacity, padding −1; the gradient view is
    exactly the most preferred of the nodes it holds (closest above first, then closest below)."""
    o, turns = case
    bootstrap_python(o) if _cycle is None else _cycle.bootstrap(o)
    run_cycles_python(o, 1, turns) if _cycle is None else _cycle.run_cycles(o, 1, turns)
    for nodes, lengths in ((o.cyclon_node, o.cyclon_length), (o.gradient_node, o.gradient_length)):
        for u in range(o.n):
            held = nodes[u, : lengths[u]].tolist()
            assert len(set(held)) == len(held) and u not in held
            assert all(v == -1 for v in nodes[u, lengths[u]:])
    for u in range(o.n):
        k = int(o.gradient_length[u])
        keys = list(zip(o.gradient_utility[u, :k].tolist(), o.gradient_node[u, :k].tolist()))
        me = (float(o.utility[u]), u)
        above = [key for key in keys if key > me]
        assert keys == above + [key for key in keys if key < me]
        assert above == sorted(above) and keys[len(above):] == sorted(keys[len(above):], reverse=True)
    assert int(o.counters[0]) <= o.n * len(turns)  # a node whose Cyclon view emptied starts none


# -- any other input: the reference's answer or exception -------------------------------------------
def _outcome(function: Any, *args: Any) -> tuple[str, str]:
    try:
        function(*args)
    except Exception as error:  # noqa: BLE001 - the outcome is compared
        return type(error).__name__, str(error)
    return "ok", ""


def _base() -> CycleOverlay:
    o = overlay(12, 4, 2, 3, 20.0, 5, [-(i % 5) / 4 for i in range(12)])
    bootstrap_python(o)
    return o


BREAKS: dict[str, Any] = {
    "a node out of range": lambda o: o.cyclon_node.__setitem__((0, 0), 99),
    "a node in its own view": lambda o: o.gradient_node.__setitem__((3, 0), 3),
    "a repeated node": lambda o: o.cyclon_node.__setitem__((1, 1), int(o.cyclon_node[1, 0])),
    "a repeated node in the view read": lambda o: (o.answer_length.__setitem__(1, 2), o.answer_node.__setitem__(1, 7)),
    "a length beyond the row": lambda o: o.cyclon_length.__setitem__(2, 9),
    "a negative length": lambda o: o.gradient_length.__setitem__(2, -1),
    "a NaN stamp": lambda o: o.cyclon_stamp.__setitem__((4, 0), float("nan")),
    "a NaN utility": lambda o: o.utility.__setitem__(5, float("nan")),
    "dirty padding": lambda o: o.gradient_stamp.__setitem__((0, 2), 1.0) if o.gradient_length[0] < 3 else None,
    "an order that is no permutation": lambda o: o.order.__setitem__(0, 1),
    "an array of another dtype": lambda o: setattr(o, "cyclon_stamp", o.cyclon_stamp.astype(np.float32)),
    "a strided array": lambda o: setattr(o, "utility", np.zeros(24)[::2]),
    "a read-only array": lambda o: o.counters.setflags(write=False),
    "a list for an array": lambda o: setattr(o, "rng", [1]),
    "a missing attribute": lambda o: delattr(o, "order"),
    "a float size": lambda o: setattr(o, "view_size", 3.0),
    "an int max_age": lambda o: setattr(o, "max_age", 20),
    "a NaN max_age": lambda o: setattr(o, "max_age", float("nan")),
    "two names for one array": lambda o: setattr(o, "cyclon_stamp", o.cyclon_utility),
    "a size the arrays do not have": lambda o: setattr(o, "n", 13),
    "a huge size": lambda o: setattr(o, "view_size", 10**30),
}


@needs_c
@pytest.mark.parametrize("name", sorted(BREAKS))
@pytest.mark.parametrize("first, turns", [(1, [1, 2]), (1.0, [1]), (1, [1.0]), (1, (1,)), (-1, [1]), (1, [-1])])
def test_any_other_input_gets_the_references_answer(name: str, first: Any, turns: Any) -> None:
    fast, slow = _base(), _base()
    BREAKS[name](fast)
    BREAKS[name](slow)
    assert _outcome(_cycle.run_cycles, fast, first, turns) == _outcome(run_cycles_python, slow, first, turns)
    for array in ARRAYS:
        mine, theirs = getattr(fast, array, None), getattr(slow, array, None)
        if isinstance(mine, np.ndarray):
            assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), array


@needs_c
def test_the_wrong_number_of_arguments_is_the_references_error() -> None:
    for args in [(), (_base(),), (_base(), 1, [1], 2)]:
        assert _outcome(_cycle.run_cycles, *args)[0] == _outcome(run_cycles_python, *args)[0]
        assert _outcome(_cycle.bootstrap, *args)[0] == _outcome(bootstrap_python, *args)[0]


# -- the run ------------------------------------------------------------------------------------------
def test_gradient_turns_follow_the_event_driven_timing() -> None:
    def turns(spt: float) -> list[int]:
        config = OverlayConfig.build(nodes=20, neighbors=3, shuffles_per_tick=spt, mode="cycle")
        return [gradient_turns(config, k) for k in range(1, 7)]

    assert turns(1.0) == [1] * 6
    assert turns(2.0) == [2] * 6
    assert turns(0.5) == [0, 1, 0, 1, 0, 1]


@pytest.mark.slow
def test_a_cycle_run_is_deterministic_and_costs_what_its_exchanges_would_send() -> None:
    config = OverlayConfig.build(nodes=3000, neighbors=4, rounds=30, seed=2, mode="cycle", perturbations=5)
    first, again = run_overlay_config(config), run_overlay_config(config)
    wall = ("wall_time_s", "observer_wall_s", "emulation_wall_s", "events_per_s", "exchanges_per_s")
    assert {k: v for k, v in first.items() if k not in wall} == {k: v for k, v in again.items() if k not in wall}
    assert first["config"]["mode"] == "cycle" and first["cyclon_exchanges"] == 3000 * first["cyclon_rounds"]
    assert first["messages"]["CyclonShuffle"] == first["messages"]["CyclonReply"] == first["cyclon_exchanges"]
    event = run_overlay_config(OverlayConfig.build(nodes=3000, neighbors=4, rounds=30, seed=2))
    assert event["round_rows"][-1]["ideal_view_fraction"] == pytest.approx(first["round_rows"][30]["ideal_view_fraction"],
                                                                       abs=0.1)
    assert first["recovery"]["recovered"] == 5


def test_options_the_cycle_engine_does_not_read_are_named_in_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    from drfemu.cli import main
    from drfemu.schema.params import unread_choices

    for option in ({"latency": "2ms"}, {"gradient": "kompics"}, {"softmax_temperature": 2.0}):
        assert unread_choices(OverlayConfig.PARAMS, {"mode": "cycle", **option}) == [
            f"--{next(iter(option)).replace('_', '-')} is not read under --mode cycle"]
        assert unread_choices(OverlayConfig.PARAMS, option) == []  # the event engine reads them
    assert unread_choices(OverlayConfig.PARAMS, {"mode": "cycle", "gradient": "tman"}) == []  # its own gradient
    assert main(["overlay", "--mode", "cycle", "--nodes", "50", "--rounds", "2", "--latency", "2ms"]) == 0
    assert "drfemu: warning: --latency is not read under --mode cycle; ignored" in capsys.readouterr().err


def test_counters_are_named_once() -> None:
    assert len(COUNTERS) == len(set(COUNTERS)) == CycleOverlay(3, 1, 1, 1, 1.0, 0).counters.size


def test_a_size_that_does_not_fit_the_machine_is_refused_before_it_starts(monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from drfemu.cli import main
    from drfemu.schema import overlay_config

    monkeypatch.setattr(overlay_config, "available_memory", lambda: 3 * 2**30)
    assert main(["overlay", "--nodes", "1000000", "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nodes 1,000,000 needs about" in err and "in event mode" in err
    assert "this process may take 3.0 GB (the least of the machine's free memory, its cgroup's and its ulimit's); " \
           "--mode cycle needs about" in err
    needed = overlay_config.memory_needed(OverlayConfig.build(nodes=1000, mode="cycle"), 1_000_000)
    assert needed < 3 * 2**30  # the cycle engine's million nodes fit where the event engine's do not
