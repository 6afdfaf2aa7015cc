"""Fault windows on one setting compose by one rule (issue 37): the latest-started window still
open is in force, else the setting's base — checked against a direct model of "the value in
force at time t", for the bookkeeping alone and for the injector in a run."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.assembly.faults import FaultInjector
from drfemu.assembly.windows import Window, Windows, value_at
from drfemu.kernel.latency import ConstantLatency
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.network import Network
from drfemu.nodes.runtime import Runtime
from drfemu.nodes.session import run_loop
from drfemu.schema.faults import BoundScenario, parse_scenario

HORIZON = 12  # whole seconds; windows start and end on them, probes look between them

# (start, duration or None for a window that never closes, value): overlapping, nested,
# touching, simultaneous and permanent windows all come up.
windows_st = st.lists(st.tuples(st.integers(0, HORIZON - 1), st.one_of(st.none(), st.integers(1, 6)),
                                st.sampled_from([0.05, 0.1, 0.2, 0.3, 0.5])), min_size=1, max_size=7)


def _windows(drawn: list[tuple[int, int | None, float]]) -> list[Window[float]]:
    return [Window(float(s), float("inf") if d is None else float(s + d), v, k + 1)
            for k, (s, d, v) in enumerate(drawn)]


def test_the_rule_on_the_issues_cases() -> None:
    overlapping = [Window(1.0, 5.0, 0.3, 1), Window(3.0, 8.0, 0.56, 2)]
    assert [value_at(t, overlapping, 0.0) for t in (0.5, 2, 4, 6, 9)] == [0.0, 0.3, 0.56, 0.56, 0.0]
    touching = [Window(1.0, 3.0, 0.3, 1), Window(3.0, 6.0, 0.56, 2)]
    assert [value_at(t, touching, 0.0) for t in (2, 3, 5, 6)] == [0.3, 0.56, 0.56, 0.0]
    simultaneous = [Window(1.0, 4.0, 0.3, 1), Window(1.0, 2.0, 0.1, 2)]
    assert [value_at(t, simultaneous, 0.0) for t in (1, 3)] == [0.1, 0.3]  # the later event wins while it lasts


@settings(max_examples=300, deadline=None)
@given(windows_st)
def test_the_bookkeeping_follows_the_rule_whatever_the_windows(drawn: list[tuple[int, int | None, float]]) -> None:
    """Driven as the injector drives it: at an instant, the windows that start there open first
    (in scenario order), then those that end there close (in the order they opened)."""
    windows = _windows(drawn)
    book: Windows[float] = Windows(0.0)
    closing: dict[float, list[int]] = {}
    for t in range(HORIZON + 8):
        for w in sorted((w for w in windows if w.start == t), key=lambda w: w.order):
            book.open(w.order, w.value)
            closing.setdefault(w.end, []).append(w.order)
        for order in closing.pop(float(t), []):
            book.close(order)
        assert book.in_force() == value_at(t + 0.5, windows, 0.0), f"at {t}: {windows}"


class BarePort:
    """A fault port over a runtime with no actors: the network's windows and partitions only."""

    def __init__(self, runtime: Runtime, servers: list[int]) -> None:
        self.runtime, self.network, self.servers = runtime, runtime.network, servers

    @property
    def targets(self) -> dict[Any, int]:
        return {}

    @property
    def down(self) -> set[int]:
        return self.runtime.down

    def call_at(self, at: float, callback: Any) -> None:
        self.runtime.call_at(at, callback)

    def take_down(self, actor: int, now: float) -> None:
        raise AssertionError("no actor to crash")

    bring_back = notify = centre = take_down


def _events(drawn: list[tuple[int, int | None, Any]], action: str) -> list[dict[str, Any]]:
    events = []
    for start, duration, value in drawn:
        event: dict[str, Any] = {"at": f"{start}s", "action": action, action: value}
        if duration is not None:
            event["duration"] = f"{duration}s"
        events.append(event)
    return events


def _probe(document: dict[str, Any], read: Any) -> list[Any]:
    """Play `document` into an empty run's network; read the setting half way through each second."""
    network = Network(ConstantLatency(0.001), loss_rng=random.Random(1))
    runtime = Runtime(network, [])
    FaultInjector(BoundScenario(parse_scenario(document), {}), BarePort(runtime, []), RandomStreams(1))
    seen: list[Any] = []
    for t in range(HORIZON + 8):
        runtime.call_at(t + 0.5, lambda now: seen.append(read(network)))
    runtime.call_at(HORIZON + 9, lambda now: runtime.stop(None))
    run_loop(runtime.run())
    return seen


@settings(max_examples=60, deadline=None)
@given(windows_st, st.sampled_from([0.0, 0.02]))
def test_loss_windows_in_a_run_mean_what_they_say(drawn: list[tuple[int, int | None, float]], base: float) -> None:
    seen = _probe({"loss": base, "event": _events(drawn, "loss")}, lambda network: network.loss)
    windows = _windows(drawn)
    assert seen == [value_at(t + 0.5, windows, base) for t in range(HORIZON + 8)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, HORIZON - 1), st.one_of(st.none(), st.integers(1, 6)),
                          st.sampled_from(["5ms", "20ms", "60ms", "150ms"])), min_size=1, max_size=6))
def test_latency_windows_in_a_run_mean_what_they_say(drawn: list[tuple[int, int | None, str]]) -> None:
    seen = _probe({"event": _events(drawn, "latency")}, lambda network: network.latency.describe())
    described = {spec: ConstantLatency(float(spec.removesuffix("ms")) / 1000).describe() for _, _, spec in drawn}
    windows = [Window(float(s), float("inf") if d is None else float(s + d), described[v], k + 1)
               for k, (s, d, v) in enumerate(drawn)]
    base = ConstantLatency(0.001).describe()
    assert seen == [value_at(t + 0.5, windows, base) for t in range(HORIZON + 8)]


def test_a_window_on_one_message_type_leaves_the_others_and_the_base_alone() -> None:
    from drfemu.kernel.messages import WalkTask

    document = {"loss": 0.01, "loss_by_type": {"WalkTask": 0.1}, "event": [
        {"at": "1s", "action": "loss", "loss": 0.3, "messages": ["WalkTask"], "duration": "4s"},
        {"at": "3s", "action": "loss", "loss": 0.5, "messages": ["WalkTask"], "duration": "4s"}]}
    seen = _probe(document, lambda network: (network.loss, network._by_type.get(WalkTask)))
    assert seen[:9] == [(0.01, 0.1), (0.01, 0.3), (0.01, 0.3), (0.01, 0.5), (0.01, 0.5), (0.01, 0.5),
                        (0.01, 0.5), (0.01, 0.1), (0.01, 0.1)]


def test_a_partition_never_moves_a_server_from_another_island() -> None:
    """A counted partition draws its servers at run time, so a later partition that names one of
    them leaves it on its island and says so in the fault log."""
    document = {"event": [{"at": "1s", "action": "partition", "servers": 2, "duration": "10s"},
                          {"at": "2s", "action": "partition", "servers": ["a", "b", "c"]}]}
    scenario = parse_scenario(document)
    positions = scenario.bind(["a", "b", "c", "d"], central=True, gradient=False, max_time=50.0)
    network = Network(ConstantLatency(0.001))
    runtime = Runtime(network, [])
    injector = FaultInjector(BoundScenario(scenario, positions), BarePort(runtime, [0, 1, 2, 3]), RandomStreams(1),
                             detection=60.0)
    runtime.call_at(3.0, lambda now: runtime.stop(None))
    run_loop(runtime.run())
    first, second = injector.log
    assert len(first["servers"]) == 2
    assert sorted(second["servers"] + second["already_on_an_island"]) == [0, 1, 2]
    assert set(second["already_on_an_island"]) == set(first["servers"]) & {0, 1, 2}
