"""`drfemu bench live`: message throughput of the live runtime over loopback, across processes.

`processes` worker processes (spawned fresh) each run their share of `actors` ping actors
(`tools.bench.PingActor`, dealt round robin) on a `nodes.realtime.RealtimeRuntime`, every
actor at its own UDP socket on 127.0.0.1 (`nodes.live.DatagramLinks`). Each actor starts
`in_flight` pings; every delivered ping makes its receiver send one on to a uniformly random
actor — in another process (K−1)/K of the time — so the number in flight stays constant (a few
datagrams wait in each socket's buffer, far below what would overflow it). Every message is encoded by the wire
codec, timestamped, sent, received, checked and decoded exactly as in a live run.

After `warmup` wall seconds each process counts the pings its actors receive for `seconds`;
the rate is their sum over `seconds`. Reported beside it: one-way latency percentiles over the
same window (binned as in a live run) and send errors.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import ConstantLatency
from drfemu.kernel.streams import RandomStreams
from drfemu.live.coordinator import quantiles_of
from drfemu.nodes.live import DatagramLinks
from drfemu.nodes.network import Network
from drfemu.nodes.realtime import RealtimeRuntime
from drfemu.nodes.session import loop_name, run_loop, timed
from drfemu.nodes.wire import Codec
from drfemu.tools.bench import Ping, PingActor
from drfemu.tools.pools import checked_pool_size, worker_pool

__all__ = ["LiveBenchResult", "run_live_bench"]

START_MARGIN = 0.5  # wall seconds between the start time being set and the first ping


@dataclass(frozen=True, slots=True)
class LiveBenchResult:
    """The delivery rate of `processes` live workers exchanging pings over loopback UDP."""

    processes: int
    actors: int
    in_flight_per_actor: int
    seconds: float
    loop: str
    messages_per_s: float
    per_process_messages_per_s: tuple[float, ...]
    latency_us: dict[str, float | None]
    send_errors: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "actors": self.actors,
            "in_flight_per_actor": self.in_flight_per_actor,
            "seconds": self.seconds,
            "loop": self.loop,
            "messages_per_s": self.messages_per_s,
            "per_process_messages_per_s": list(self.per_process_messages_per_s),
            "one_way_latency_us": self.latency_us,
            "send_errors": self.send_errors,
        }


async def _ping(index: int, processes: int, actors: int, in_flight: int, seconds: float, warmup: float, seed: int,
                ports: Any, go: Any) -> dict[str, Any]:
    rng = RandomStreams(seed + index).python("bench/peers")
    nodes = [PingActor(i, actors, rng) for i in range(actors)]
    mine = nodes[index::processes]
    network = Network(ConstantLatency(0.0))
    links = DatagramLinks(network, Codec({"Ping": Ping}))
    runtime = RealtimeRuntime(network, nodes, hosted=[a.id for a in mine], links=links)
    await links.open(runtime, {a.id: ("127.0.0.1", 0) for a in mine})
    try:
        loop = asyncio.get_running_loop()
        ports.put(links.bound_ports())
        addresses, start_wall = await loop.run_in_executor(None, go.get)
        links.set_addresses({int(k): tuple(v) for k, v in addresses.items()})
        first = RandomStreams(seed + index).python("bench/first")
        for actor in mine:
            for _ in range(in_flight):
                actor.send(int(first.random() * actors), Ping(0))
        runtime.begin(time.monotonic() + (start_wall - time.time()))
        for actor in mine:
            runtime.inject(actor)
        counted: dict[str, int] = {}

        def mark(label: str) -> None:
            counted[label] = runtime.delivered
            if label == "begin":
                links.latency_histogram[:] = [0] * len(links.latency_histogram)
            else:
                runtime.stop()

        runtime.call_at(warmup, lambda now: mark("begin"))
        runtime.call_at(warmup + seconds, lambda now: mark("end"))
        await timed(runtime.run())
        return {"delivered": counted["end"] - counted["begin"], "loop": loop_name(loop),
                "send_errors": links.send_errors, "latency_histogram": links.latency_histogram}
    finally:
        links.close()


def _worker(index: int, processes: int, actors: int, in_flight: int, seconds: float, warmup: float, seed: int,
            ports: Any, go: Any) -> dict[str, Any]:
    return run_loop(_ping(index, processes, actors, in_flight, seconds, warmup, seed, ports, go), "best")


MAX_SECONDS = 3600.0  # an hour of pings is more than any rate needs


def run_live_bench(processes: int = 2, actors: int = 200, in_flight: int = 4, seconds: float = 5.0,
                   warmup: float = 1.0, seed: int = 1) -> LiveBenchResult:
    """Run the live ping benchmark once (see the module's docstring)."""
    if not (1 <= processes <= actors and 1 <= in_flight and 0 < seconds <= MAX_SECONDS and 0 <= warmup <= MAX_SECONDS):
        raise InputError(f"bench live needs processes >= 1, actors >= processes, in-flight >= 1 and seconds in "
                         f"(0, {MAX_SECONDS:g}]")
    checked_pool_size(processes, "--processes")
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    try:
        ports = manager.Queue()
        goes = [manager.Queue() for _ in range(processes)]
        with worker_pool(processes, mp_context=context) as pool:
            futures = [pool.submit(_worker, i, processes, actors, in_flight, seconds, warmup, seed, ports, goes[i])
                       for i in range(processes)]
            addresses: dict[int, Any] = {}
            for _ in range(processes):
                addresses.update(ports.get(timeout=120))
            start_wall = time.time() + START_MARGIN
            for go in goes:
                go.put(({k: list(v) for k, v in addresses.items()}, start_wall))
            reports = [f.result() for f in futures]
    finally:
        manager.shutdown()
    quantiles = quantiles_of(np.sum([r["latency_histogram"] for r in reports], axis=0), 1e6)
    rates = tuple(r["delivered"] / seconds for r in reports)
    return LiveBenchResult(
        processes=processes, actors=actors, in_flight_per_actor=in_flight, seconds=seconds, loop=reports[0]["loop"],
        messages_per_s=sum(rates), per_process_messages_per_s=rates, latency_us=quantiles,
        send_errors=sum(r["send_errors"] for r in reports))
