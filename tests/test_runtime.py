"""The runtime: batched delivery, mailbox draining, ordering, ticks, network accounting."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, ClassVar

import pytest

from drfemu.kernel.latency import ConstantLatency, PairLatency, UniformLatency, parse_duration, parse_latency
from drfemu.kernel.messages import handles, message
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor, UnhandledMessage, Wake
from drfemu.nodes.network import CostModel, Network
from drfemu.nodes.realtime import RealtimeRuntime
from drfemu.nodes.runtime import Runtime
from drfemu.nodes.session import run_loop


@message
class Note:
    text: str
    WIRE: ClassVar[tuple[int, int]] = (1, 1)


@message
class Bulk:
    items: tuple[int, ...]
    WIRE: ClassVar[tuple[int, int, str, int, int]] = (0, 0, "items", 1, 0)


class Recorder(Actor):
    __slots__ = ("seen", "wakeups", "ticks")

    def __init__(self, actor_id: int) -> None:
        super().__init__(actor_id)
        self.seen: list[tuple[float, str]] = []
        self.wakeups: list[int] = []
        self.ticks: list[float] = []

    def drain(self, messages: list[Any], now: float) -> None:
        self.wakeups.append(len(messages))
        super().drain(messages, now)

    @handles(Note)
    def on_note(self, msg: Note, now: float) -> None:
        self.seen.append((now, msg.text))
        if msg.text.startswith("echo:"):
            self.send(0, Note("re:" + msg.text))

    @handles(Bulk)
    def on_bulk(self, msg: Bulk, now: float) -> None:
        self.seen.append((now, f"bulk{len(msg.items)}"))

    def on_tick(self, now: float) -> None:
        self.ticks.append(now)


def run(actors: list[Actor], until: float, network: Network | None = None, setup: Any = None) -> Runtime:
    runtime = Runtime(network or Network(), actors)
    if setup:
        setup(runtime)
    runtime.call_at(until, runtime.stop)
    run_loop(runtime.run())
    return runtime


def test_messages_arrive_after_latency_in_send_order_and_one_wakeup() -> None:
    a, b = Recorder(0), Recorder(1)

    def setup(rt: Runtime) -> None:
        for text in ("x", "y", "z"):
            a.send(1, Note(text))
        rt.inject(a)

    run([a, b], 1.0, Network(ConstantLatency(0.005)), setup)
    assert b.seen == [(0.005, "x"), (0.005, "y"), (0.005, "z")]
    assert b.wakeups == [3]


def test_replies_are_routed_and_counted_with_the_cost_model() -> None:
    a, b = Recorder(0), Recorder(1)
    network = Network(ConstantLatency(0.001), cost=CostModel(number_bytes=8, address_bytes=4, overhead_bytes=20))

    def setup(rt: Runtime) -> None:
        a.send(1, Note("echo:1"))
        a.send(1, Bulk((1, 2, 3)))
        rt.inject(a)

    run([a, b], 1.0, network, setup)
    assert a.seen == [(0.002, "re:echo:1")]
    tally = network.tally()
    assert tally["Note"].sent == 2 and tally["Note"].bytes == 2 * (8 + 4 + 20)
    assert tally["Bulk"].sent == 1 and tally["Bulk"].bytes == 3 * 8 + 20


def test_ticks_fire_at_exact_multiples_and_timers_after_deliveries() -> None:
    a, b = Recorder(0), Recorder(1)
    order: list[str] = []

    def setup(rt: Runtime) -> None:
        rt.start_ticks(0.1, [b])
        rt.call_at(0.05, lambda now: order.append("timer"))
        a.send(1, Note("at-0.05"))
        rt.call_at(0.049, lambda now: rt.inject(a))  # delivered at 0.050, before the timer

    b_seen = b.seen
    run([a, b], 0.35, Network(ConstantLatency(0.001)), setup)
    assert b.ticks == [0.1, 0.2, 0.3]
    assert b_seen == [(0.05, "at-0.05")]
    assert order == ["timer"]


def test_periodic_drivers_fire_in_creation_order_whatever_their_periods() -> None:
    a, b = Recorder(0), Recorder(1)
    order: list[tuple[float, str]] = []

    def setup(rt: Runtime) -> None:
        rt.every(0.1, hooks=[lambda now, k: order.append((now, f"observer{k}"))])
        rt.every(0.2, [a], lambda actor, now: order.append((now, "slow")))  # armed before the observer re-arms
        rt.every(0.1, [b], lambda actor, now: order.append((now, "fast")))
        rt.call_at(0.2, lambda now: order.append((now, "one-off")))

    run([a, b], 0.25, Network(), setup)
    assert order == [(0.1, "observer1"), (0.1, "fast"),
                     (0.2, "observer2"), (0.2, "slow"), (0.2, "fast"), (0.2, "one-off")]


def test_lossy_network_drops_deterministically() -> None:
    def lossy_run() -> tuple[int, int]:
        actors = [Recorder(0), Recorder(1)]
        network = Network(ConstantLatency(0.001), loss=0.3, loss_rng=RandomStreams(7).python("network/loss"))

        def setup(rt: Runtime) -> None:
            for i in range(1000):
                actors[0].send(1, Note(str(i)))
            rt.inject(actors[0])

        rt = run(actors, 1.0, network, setup)
        return rt.delivered, network.messages_dropped

    first = lossy_run()
    assert first == lossy_run()
    assert first[0] + first[1] == 1000 and 200 < first[1] < 400


def test_jittered_latency_delivers_within_bounds() -> None:
    a, b = Recorder(0), Recorder(1)
    network = Network(UniformLatency(0.001, 0.003, random.Random(3)))

    def setup(rt: Runtime) -> None:
        for i in range(200):
            a.send(1, Note(str(i)))
        rt.inject(a)

    run([a, b], 1.0, network, setup)
    times = [t for t, _ in b.seen]
    assert len(times) == 200 and min(times) >= 0.001 and max(times) <= 0.003
    assert times == sorted(times)


def test_pair_latency_is_symmetric_and_bounded() -> None:
    model = PairLatency(0.001, 0.020, random.Random(1))
    for src, dst in [(0, 1), (5, 9), (100, 3)]:
        assert model.latency_us(src, dst) == model.latency_us(dst, src)
        assert 1000 <= model.latency_us(src, dst) <= 20000


def test_latency_and_duration_parsing() -> None:
    rng = random.Random(0)
    assert parse_duration("100ms") == pytest.approx(0.1)
    assert parse_duration("250us") == pytest.approx(0.00025)
    with pytest.raises(ValueError, match="a unit is required"):
        parse_duration("2")  # a bare number is refused, not read as seconds
    with pytest.raises(ValueError, match="out of range"):
        parse_duration("1e400s")
    assert isinstance(parse_latency("1ms", rng), ConstantLatency)
    assert isinstance(parse_latency("uniform:1ms:2ms", rng), UniformLatency)
    assert isinstance(parse_latency("pair:1ms:9ms:1ms", rng), PairLatency)
    for bad in ("fast", "uniform:2ms", "uniform:3ms:1ms", "pair:1ms"):
        with pytest.raises(ValueError):
            parse_latency(bad, rng)


def test_unhandled_message_is_an_error() -> None:
    class Mute(Actor):
        __slots__ = ()

    with pytest.raises(UnhandledMessage):
        Mute(0).receive(Note("?"), 0.0)
    a, mute = Recorder(0), Mute(1)

    def setup(rt: Runtime) -> None:
        a.send(1, Note("?"))
        rt.inject(a)

    with pytest.raises(UnhandledMessage):
        run([a, mute], 1.0, None, setup)


def test_actor_ids_must_match_positions() -> None:
    with pytest.raises(ValueError):
        Runtime(Network(), [Recorder(1)])


def test_named_streams_are_independent_and_reproducible() -> None:
    s = RandomStreams(42)
    assert s.python("a").random() == RandomStreams(42).python("a").random()
    assert s.python("a").random() != s.python("b").random()
    assert RandomStreams(43).python("a").random() != s.python("a").random()
    with pytest.raises(ValueError):
        RandomStreams(-1)


@pytest.mark.asyncio
async def test_the_same_runtime_paced_by_the_real_clock_does_the_same_at_the_same_times() -> None:
    """The real-time runtime differs only in when an instant is due: the same actors do the same
    things at the same protocol times, and the wall clock has moved at least that far."""
    a, b = Recorder(0), Recorder(1)
    runtime = RealtimeRuntime(Network(ConstantLatency(0.002)), [a, b], time_scale=0.5)
    runtime.start_ticks(0.02, [b])
    a.send(1, Note("echo:live"))
    runtime.inject(a)
    runtime.call_at(0.05, runtime.stop)
    started = time.monotonic()
    await runtime.run()
    assert time.monotonic() - started >= 0.025  # 0.05 protocol seconds at half the wall clock's pace
    assert b.seen == [(0.002, "echo:live")] and a.seen == [(0.004, "re:echo:live")]
    assert b.ticks == [0.02, 0.04]


class Named(Wake):
    """A wake-up that says which it is."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def trace_form(self) -> str:
        return self.name


class Sleeper(Recorder):
    """A recorder that asks to be woken."""

    __slots__ = ("woken",)

    def __init__(self, actor_id: int) -> None:
        super().__init__(actor_id)
        self.woken: list[tuple[float, str]] = []

    def on_timer(self, key: Named, now: float) -> None:
        self.woken.append((now, key.name))


def test_a_crashed_actor_hears_sends_and_fires_nothing_until_a_fresh_one_restarts_it() -> None:
    a, b = Recorder(0), Sleeper(1)
    fresh = Sleeper(1)
    network = Network(ConstantLatency(0.01))

    def setup(rt: Runtime) -> None:
        rt.start_ticks(0.1, [a, b])
        b.wake_at(0.35, Named("old life"))
        rt.call_at(0.095, lambda now: (a.send(1, Note("before the crash")), rt.inject(a)))
        rt.call_at(0.145, lambda now: (a.send(1, Note("in flight at the crash")), rt.inject(a)))
        rt.deliver_at(0.3, 1, Note("from its own machine"))
        rt.call_at(0.15, lambda now: rt.crash(1))
        rt.call_at(0.17, lambda now: (a.send(1, Note("sent while down")), rt.inject(a)))
        rt.call_at(0.25, lambda now: rt.restart(fresh))
        rt.call_at(0.26, lambda now: (fresh.wake_at(0.4, Named("new life")), rt.inject(fresh)))
        rt.call_at(0.27, lambda now: (a.send(1, Note("after the restart")), rt.inject(a)))

    runtime = run([a, b], 0.45, network, setup)
    assert b.seen == [(0.105, "before the crash")]
    assert b.ticks == [0.1] and fresh.ticks == [0.3, 0.4] and a.ticks == [0.1, 0.2, 0.3, 0.4]
    assert b.woken == [] and fresh.woken == [(0.4, "new life")]
    assert fresh.seen == [(0.28, "after the restart")]
    assert network.causes["down"] == 3  # in flight at the crash, sent while down, the machine's input
    assert runtime.down == set() and runtime.actors[1] is fresh


def test_restarting_an_actor_that_is_up_is_an_error() -> None:
    def setup(rt: Runtime) -> None:
        with pytest.raises(ValueError, match="not down"):
            rt.restart(Recorder(0))

    run([Recorder(0)], 0.1, setup=setup)


def test_the_instants_run_in_time_order_after_what_the_loop_had_ready() -> None:
    """The runtime keeps its instants in a heap of its own (issue 40; issue 56: the loop holds
    none of them): they run in time order — one made during an instant for that same instant,
    or for an earlier pending one, included — after a callback the loop already had ready."""
    runtime = Runtime(Network(), [Recorder(0)])
    ran: list[tuple[float, str]] = []

    def note(label: str) -> Any:
        return lambda now: ran.append((now, label))

    for at in (0.5, 0.1, 0.3, 0.2):
        runtime.call_at(at, note(f"at {at}"))
    assert runtime.pending_instants == 4
    runtime.call_at(0.2, lambda now: (runtime.call_at(now, note("same instant, made at 0.2")),
                                      runtime.call_at(0.25, note("made at 0.2 for 0.25"))))
    runtime.call_at(0.6, runtime.stop)

    async def main() -> None:
        asyncio.get_running_loop().call_soon(lambda: ran.append((-1.0, "a ready callback first")))
        await runtime.run()

    run_loop(main())
    assert [label for _, label in ran] == ["a ready callback first", "at 0.1", "at 0.2", "same instant, made at 0.2",
                                          "made at 0.2 for 0.25", "at 0.3", "at 0.5"]
    assert [now for now, _ in ran] == [-1.0, 0.1, 0.2, 0.2, 0.25, 0.3, 0.5]
