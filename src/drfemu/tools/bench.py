"""`drfemu bench`: message throughput of the runtime against a naive asyncio design, and
against the leanest loop Python allows.

The three designs move the same message pattern, with the same actors count, messages in
flight, latency and random peer choice:

- **runtime**: the project's `Runtime` — actors with mailboxes, deliveries batched per
  instant, outboxes flushed through the `Network` (with its per-type accounting).
- **naive**: one asyncio task and one `asyncio.Queue` per actor, one `loop.call_at` timer per
  message, on asyncio's own loop and clock (the CPU, not the latency, bounds it: every timer is
  overdue by the time the loop reaches it, as every instant is in a virtual run);
- **bare**: the limit — no event loop and no actors, a `heapq` of due instants (integer
  microseconds), each instant's deliveries one list; a delivery builds the next message of
  the same class and picks its destination, nothing else. The runtime's rate as a fraction of
  this one (`limit_fraction`) is how close the engine is to what Python can do at all.

Every delivered message makes its receiver send one new message to a uniformly random
actor, so the number in flight stays constant. Rates are delivered messages per wall second.
Every design is timed the same way, under the same garbage-collector settings
(`nodes.session.timed`), and every timed sample runs in a fresh process: measured here, the
runtime lost ~20% when it ran in a process whose heap the naive design's thousand tasks and
queues had just fragmented.
"""

from __future__ import annotations

import asyncio
import heapq
import multiprocessing
import random
from dataclasses import dataclass

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import ConstantLatency, to_us
from drfemu.kernel.messages import handles, message
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor
from drfemu.nodes.network import Network
from drfemu.nodes.runtime import ENGINE_IMPLEMENTATION, Runtime
from drfemu.nodes.session import run_loop, timed
from drfemu.tools.pools import worker_pool

__all__ = ["BenchResult", "bare_rate", "run_bench"]


@message
class Ping:
    """A benchmark message: how many hops it has travelled."""

    hops: int


class PingActor(Actor):
    """Forwards every ping, one hop further, to a uniformly random actor."""

    __slots__ = ("_random", "_count")

    def __init__(self, actor_id: int, count: int, rng: random.Random) -> None:
        super().__init__(actor_id)
        self._random = rng.random
        self._count = count

    @handles(Ping)
    def on_ping(self, msg: Ping, now: float) -> None:
        self.send(int(self._random() * self._count), Ping(msg.hops + 1))


@dataclass(frozen=True, slots=True)
class BenchResult:
    """Best-of-`repeats` delivery rates of both designs, measured interleaved in one run."""

    actors: int
    in_flight_per_actor: int
    latency_ms: float
    repeats: int
    messages_per_s: float
    naive_messages_per_s: float
    samples: tuple[float, ...]
    naive_samples: tuple[float, ...]
    bare_messages_per_s: float
    bare_samples: tuple[float, ...]

    @property
    def speedup(self) -> float:
        return self.messages_per_s / self.naive_messages_per_s

    @property
    def limit_fraction(self) -> float:
        """The runtime's rate as a fraction of the bare loop's."""
        return self.messages_per_s / self.bare_messages_per_s

    def to_dict(self) -> dict[str, object]:
        return {
            "actors": self.actors,
            "in_flight_per_actor": self.in_flight_per_actor,
            "latency_ms": self.latency_ms,
            "repeats": self.repeats,
            "messages_per_s": self.messages_per_s,
            "naive_messages_per_s": self.naive_messages_per_s,
            "speedup": self.speedup,
            "bare_messages_per_s": self.bare_messages_per_s,
            "limit_fraction": self.limit_fraction,
            "samples_messages_per_s": list(self.samples),
            "naive_samples_messages_per_s": list(self.naive_samples),
            "bare_samples_messages_per_s": list(self.bare_samples),
            "engine": ENGINE_IMPLEMENTATION,
        }


def _bench_runtime(actors: int, in_flight: int, latency: float, messages: int, seed: int) -> tuple[int, float]:
    rng = RandomStreams(seed).python("bench/peers")
    nodes = [PingActor(i, actors, rng) for i in range(actors)]
    runtime = Runtime(Network(ConstantLatency(latency)), nodes)
    for node in nodes:
        for _ in range(in_flight):
            node.send(int(rng.random() * actors), Ping(0))
        runtime.inject(node)
    rounds = -(-messages // (actors * in_flight))
    runtime.call_at(rounds * latency + latency / 2, runtime.stop)
    _, wall = run_loop(timed(runtime.run()))
    return runtime.delivered, wall


def _bench_naive(actors: int, in_flight: int, latency: float, messages: int, seed: int) -> tuple[int, float]:
    async def naive() -> int:
        loop = asyncio.get_running_loop()
        rng = RandomStreams(seed).python("bench/peers")
        pick = rng.random
        queues: list[asyncio.Queue[Ping]] = [asyncio.Queue() for _ in range(actors)]
        delivered = 0
        enough = loop.create_future()

        async def actor(inbox: asyncio.Queue[Ping]) -> None:
            nonlocal delivered
            while True:
                msg = await inbox.get()
                delivered += 1
                if delivered == messages:
                    enough.set_result(None)
                target = queues[int(pick() * actors)]
                loop.call_at(loop.time() + latency, target.put_nowait, Ping(msg.hops + 1))

        for _ in range(actors * in_flight):
            loop.call_at(loop.time() + latency, queues[int(pick() * actors)].put_nowait, Ping(0))
        tasks = [loop.create_task(actor(q)) for q in queues]
        await enough
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return delivered

    return run_loop(timed(naive()))


def _bench_bare(actors: int, in_flight: int, latency: float, messages: int, seed: int) -> tuple[int, float]:
    rng = RandomStreams(seed).python("bench/peers")
    pick = rng.random
    step = to_us(latency)
    due: dict[int, list[tuple[int, Ping]]] = {
        step: [(int(pick() * actors), Ping(0)) for _ in range(actors * in_flight)]}
    heap = [step]
    rounds = -(-messages // (actors * in_flight))
    end = rounds * step + step // 2

    async def bare() -> int:  # no event loop in it: a coroutine only to be timed as the others are
        delivered = 0
        while heap:
            now = heapq.heappop(heap)
            if now > end:
                break
            batch = due.pop(now)
            out = [(int(pick() * actors), Ping(msg.hops + 1)) for _, msg in batch]
            delivered += len(batch)
            later = now + step
            if later in due:
                due[later] += out
            else:
                due[later] = out
                heapq.heappush(heap, later)
        return delivered

    return run_loop(timed(bare()))


_DESIGNS = {"runtime": _bench_runtime, "naive": _bench_naive, "bare": _bench_bare}


def _sample(design: str, actors: int, in_flight: int, latency: float, messages: int, seed: int) -> float:
    delivered, wall = _DESIGNS[design](actors, in_flight, latency, messages, seed)
    return delivered / wall


ACTORS, IN_FLIGHT, LATENCY_S, MESSAGES = 1000, 10, 0.001, 2_000_000
"""The engine benchmark's defaults."""


def bare_rate(seed: int = 1) -> float:
    """The bare loop's events a second with the engine benchmark's defaults: the limit other
    benchmarks compare with (`tools.overlay_bench`)."""
    return _sample("bare", ACTORS, IN_FLIGHT, LATENCY_S, MESSAGES, seed)


def run_bench(
    actors: int = ACTORS,
    in_flight: int = IN_FLIGHT,
    latency: float = LATENCY_S,
    messages: int = MESSAGES,
    naive_messages: int = 300_000,
    repeats: int = 3,
    seed: int = 1,
) -> BenchResult:
    """Time the three designs `repeats` times, interleaved, each sample in a fresh process.

    Keeps each design's best rate (as `timeit` does): noise from the rest of the machine only
    ever slows a run down, and interleaving exposes both designs to the same background load.
    """
    if actors < 1 or in_flight < 1 or repeats < 1 or latency <= 0:
        raise InputError("bench needs actors >= 1, in-flight >= 1, repeats >= 1 and latency > 0")
    samples: list[float] = []
    naive_samples: list[float] = []
    bare_samples: list[float] = []
    context = multiprocessing.get_context("spawn")
    with worker_pool(1, mp_context=context, max_tasks_per_child=1) as pool:
        for _ in range(repeats):
            samples.append(pool.submit(_sample, "runtime", actors, in_flight, latency, messages, seed).result())
            naive_samples.append(pool.submit(_sample, "naive", actors, in_flight, latency, naive_messages, seed).result())
            bare_samples.append(pool.submit(_sample, "bare", actors, in_flight, latency, messages, seed).result())
    return BenchResult(
        actors=actors,
        in_flight_per_actor=in_flight,
        latency_ms=latency * 1000,
        repeats=repeats,
        messages_per_s=max(samples),
        naive_messages_per_s=max(naive_samples),
        samples=tuple(samples),
        naive_samples=tuple(naive_samples),
        bare_messages_per_s=max(bare_samples),
        bare_samples=tuple(bare_samples),
    )
