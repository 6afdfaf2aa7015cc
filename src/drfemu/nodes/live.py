"""The live runtime: some of a run's nodes, on the real clock, each at its own UDP address.

It offers the virtual `Runtime`'s interface to the set-up code (`every`, `start_ticks`,
`call_at`, `subscribe`, `publish`, `deliver_at`, `inject`, `stop`, `now`), so the same node
objects run unchanged: a handler is called with `now`, its outbox becomes datagrams, its
wake-ups become `loop.call_at`, its events go to local subscribers and to `forward` (the
worker sends them to the coordinator).

Time: protocol time `t` is wall time `start + t · time_scale` on the loop's clock (`start`
is when protocol time 0 falls); a tick of 100 ms at scale 0.1 fires every 10 ms. A wake-up's
handler is given at least its due time (uvloop fires timers up to half a millisecond early),
and no handler is given a time before one already given (`now`, `reach`).

Every node of this process has its own datagram socket; a message to a node goes to that
node's address, whether it lives here or elsewhere (no in-process shortcut, so every message
crosses the real network stack). A datagram is accepted only if it decodes (`nodes.wire`),
names a node of this process as receiver, and comes from the address of the node it names as
sender; anything else is counted (`rejected`) and dropped, never raised.

Live-only figures: one-way latency of every delivered message (a send timestamp leads each
datagram; across hosts it includes their clock offset), datagrams rejected by reason, send
errors (a full socket buffer), and how late each tick fired.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from drfemu.nodes.actor import Actor, WakeAfter, WakeUp
from drfemu.nodes.network import Network
from drfemu.nodes.wire import Codec, WireError

__all__ = ["LATENCY_BINS_PER_DECADE", "LATENCY_FLOOR_S", "STAMP", "LivePeriodic", "LiveRuntime", "latency_bin"]

STAMP = struct.Struct("!d")  # the sender's wall clock (time.time()) when it sent the datagram
LATENCY_FLOOR_S = 1e-7  # one-way latencies are binned from 0.1 µs ...
LATENCY_DECADES = 8  # ... to 10 s,
LATENCY_BINS_PER_DECADE = 20  # 20 bins a decade: a figure is known to 12 %
LATENCY_BINS = LATENCY_DECADES * LATENCY_BINS_PER_DECADE


def latency_bin(seconds: float) -> int:
    """The bin of a one-way latency: bin i holds [floor · 10^(i/20), floor · 10^((i+1)/20)); below
    the floor (a negative figure: clocks of two hosts apart) in bin 0, above 10 s in the last."""
    if seconds <= LATENCY_FLOOR_S:
        return 0
    return min(LATENCY_BINS - 1, int(math.log10(seconds / LATENCY_FLOOR_S) * LATENCY_BINS_PER_DECADE))


Address = tuple[str, int]


def _itself(endpoint: _Endpoint) -> _Endpoint:
    """The protocol factory of a node's endpoint, made before its socket."""
    return endpoint


class _Endpoint(asyncio.DatagramProtocol):
    """The socket of one local node: hands every datagram to the runtime."""

    __slots__ = ("node", "runtime", "transport")

    def __init__(self, runtime: LiveRuntime, node: int) -> None:
        self.runtime = runtime
        self.node = node
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Address) -> None:
        self.runtime._receive(self.node, data, addr)

    def error_received(self, exc: Exception) -> None:
        self.runtime.send_errors += 1


class LivePeriodic:
    """A periodic driver on the real clock: its k-th firing is due at protocol time k · period."""

    __slots__ = (
        "action",
        "actors",
        "cancelled",
        "count",
        "fired",
        "handle",
        "hooks",
        "late",
        "period",
        "runtime",
    )

    def __init__(self, runtime: LiveRuntime, period: float, actors: list[Actor],
                 action: Callable[[Any, float], None] | None, hooks: list[Callable[[float, int], None]]) -> None:
        self.runtime = runtime
        self.period = period
        self.actors = actors
        self.action = action
        self.hooks = hooks
        self.count = 0
        self.fired = 0
        self.cancelled = False
        self.late: list[float] = []  # protocol seconds each firing came after its time
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.handle is not None:
            self.handle.cancel()

    def arm(self) -> None:
        self.count += 1
        self.handle = self.runtime.loop.call_at(self.runtime.wall(self.count * self.period), self.fire)

    def fire(self) -> None:
        runtime = self.runtime
        if self.cancelled or runtime.stopped:
            return
        due = self.count * self.period
        self.late.append(max(0.0, runtime.elapsed() - due))
        now = runtime.reach(due)
        self.fired += 1
        try:
            if self.action is not None:
                for actor in self.actors:
                    self.action(actor, now)
                    runtime._after(actor)
            for hook in self.hooks:
                hook(now, self.count)
        except Exception as error:  # noqa: BLE001 - handed to whoever awaits `finished`
            runtime._fail(error)
            return
        if not (runtime.stopped or self.cancelled):
            self.arm()


class LiveRuntime:
    """Runs `local` actors (ids into a run of `size` actors) on `loop`'s real clock."""

    def __init__(self, loop: asyncio.AbstractEventLoop, network: Network, codec: Codec, size: int,
                 local: Sequence[Actor], addresses: Mapping[int, Address], time_scale: float,
                 forward: Callable[[Any], None] | None = None) -> None:
        if time_scale <= 0:
            raise ValueError("the time scale must be above 0")
        self.loop = loop
        self.network = network
        self.codec = codec
        self.actors: list[Actor | None] = [None] * size
        for actor in local:
            self.actors[actor.id] = actor
        self.local = list(local)
        self.addresses = dict(addresses)
        self._sender_of = {address: node for node, address in self.addresses.items()}
        self.scale = time_scale
        self.start = loop.time()  # re-set by `begin`
        self.forward = forward
        self._port: list[Any] = []
        for actor in self.local:
            self._port += actor.port
            actor.port = self._port
        self._subscribers: dict[type, list[Callable[[Any], None]]] = {}
        self._endpoints: dict[int, _Endpoint] = {}
        self._drivers: list[LivePeriodic] = []
        self._tick_hooks: list[Callable[[float, int], None]] = []
        self._ticks: LivePeriodic | None = None
        self.delivered = 0
        self.timer_events = 0
        self.rejected: dict[str, int] = {}
        self.send_errors = 0
        self.latency_histogram = [0] * LATENCY_BINS  # one-way latencies (wall), binned by `latency_bin`
        self.wire_bytes = 0
        self.stopped = False
        self.finished: asyncio.Future[Any] = loop.create_future()
        self._pending: list[Callable[[], object]] = []  # work set before `begin`
        self._floor = 0.0  # the latest protocol time handed to a handler

    # -- sockets and time ---------------------------------------------------------------------
    async def open(self) -> None:
        """Bind every local node's socket at its address."""
        for actor in self.local:
            host, port = self.addresses[actor.id]
            endpoint = _Endpoint(self, actor.id)
            await self.loop.create_datagram_endpoint(partial(_itself, endpoint), local_addr=(host, port),
                                                     family=socket.AF_INET)
            self._endpoints[actor.id] = endpoint

    def bound_ports(self) -> dict[int, tuple[str, int]]:
        """Each local node's bound `(host, port)` (after `open`; port 0 was given a free one)."""
        return {node: endpoint.transport.get_extra_info("sockname")[:2]  # type: ignore[union-attr]
                for node, endpoint in self._endpoints.items()}

    def set_addresses(self, addresses: Mapping[int, Address]) -> None:
        """Every node's address (the coordinator's table, once every worker has bound)."""
        self.addresses = dict(addresses)
        self._sender_of = {address: node for node, address in self.addresses.items()}

    def close(self) -> None:
        for endpoint in self._endpoints.values():
            if endpoint.transport is not None:
                endpoint.transport.close()
        self._endpoints.clear()

    def begin(self, start: float) -> None:
        """Protocol time 0 is `start` on the loop's clock: arm everything set up so far."""
        self.start = start
        pending, self._pending = self._pending, []
        for arm in pending:
            arm()

    def wall(self, at: float) -> float:
        """The loop time of protocol time `at`."""
        return self.start + at * self.scale

    def elapsed(self) -> float:
        """Protocol time as the loop's clock reads it now."""
        return (self.loop.time() - self.start) / self.scale

    @property
    def now(self) -> float:
        """Protocol time for a handler: the clock's, but never before a time already handed out
        (so it never runs backwards between handlers)."""
        now = self.elapsed()
        if now > self._floor:
            self._floor = now
        return self._floor

    def reach(self, at: float) -> float:
        """`now` for a wake-up due at `at`: at least `at`. uvloop rounds timers to the millisecond
        and fires some up to half a millisecond early; a node never sees its wake-up before its time."""
        if at > self._floor:
            self._floor = at
        return self.now

    # -- the Runtime interface --------------------------------------------------------------
    def every(self, period: float, actors: Iterable[Actor] = (), action: Callable[[Any, float], None] | None = None,
              hooks: Sequence[Callable[[float, int], None]] = ()) -> LivePeriodic:
        """Call `action(actor, now)` for the local ones of `actors` every `period` protocol seconds."""
        mine = [a for a in actors if self.actors[a.id] is a]
        driver = LivePeriodic(self, period, mine, action, list(hooks))
        self._drivers.append(driver)
        self._pending.append(driver.arm)
        return driver

    def start_ticks(self, period: float, tickers: Iterable[Actor]) -> LivePeriodic:
        self._ticks = self.every(period, tickers, _call_on_tick)
        self._ticks.hooks = self._tick_hooks
        return self._ticks

    def add_tick_hook(self, hook: Callable[[float, int], None]) -> None:
        self._tick_hooks.append(hook)

    def call_at(self, at: float, callback: Callable[[float], None], actor: Actor | None = None) -> None:
        if actor is not None and self.actors[actor.id] is not actor:
            return  # a remote node's start-up: its own process runs it

        def run() -> None:
            if self.stopped:
                return
            try:
                callback(self.reach(at))
                self.timer_events += 1
                if actor is not None:
                    self._after(actor)
                elif self._port:
                    self._drain_port()
            except Exception as error:  # noqa: BLE001
                self._fail(error)

        self._pending.append(lambda: self.loop.call_at(self.wall(at), run))

    def subscribe(self, event_type: type, handler: Callable[[Any], None]) -> None:
        self._subscribers.setdefault(event_type, []).append(handler)

    def publish(self, event: Any) -> None:
        for handler in self._subscribers.get(event.__class__, ()):
            handler(event)
        if self.forward is not None:
            self.forward(event)

    def deliver_at(self, at: float, dst: int, msg: Any) -> None:
        """An input from `dst`'s own machine (a task's exit) at protocol time `at`."""
        actor = self.actors[dst]
        if actor is None:
            raise ValueError(f"actor {dst} is not in this process")
        self.loop.call_at(self.wall(at), self._deliver_due, actor, msg, at)

    def inject(self, actor: Actor) -> None:
        """Send what `actor` queued outside a handler, once the run has begun."""
        self._pending.append(partial(self._after, actor))

    def stop(self, result: Any = None) -> None:
        self.stopped = True
        for driver in self._drivers:
            driver.cancel()
        if not self.finished.done():
            self.finished.set_result(result)

    def _fail(self, error: BaseException) -> None:
        self.stopped = True
        for driver in self._drivers:
            driver.cancel()
        if not self.finished.done():
            self.finished.set_exception(error)

    def ticks_late(self) -> list[float]:
        """How late (protocol seconds) each allocation tick fired in this process."""
        return list(self._ticks.late) if self._ticks is not None else []

    # -- delivery ---------------------------------------------------------------------------
    def _receive(self, node: int, data: bytes, addr: Address) -> None:
        if self.stopped:
            return
        arrived = time.time()
        try:
            if len(data) < STAMP.size:
                raise WireError("truncated datagram")
            (sent,) = STAMP.unpack_from(data)
            sender, receiver, msg = self.codec.decode(data[STAMP.size:])
        except WireError as error:
            self._reject(str(error).split(" (")[0].split(":")[0])
            return
        if receiver != node:
            self._reject("wrong receiver")
            return
        if self._sender_of.get((addr[0], addr[1])) != sender:
            self._reject("unknown sender")
            return
        self.latency_histogram[latency_bin(arrived - sent)] += 1
        actor = self.actors[node]
        assert actor is not None
        handler = actor.DISPATCH.get(msg.__class__)
        if handler is None:
            self._reject("no handler")
            return
        self._deliver(actor, msg)

    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _deliver_due(self, actor: Actor, msg: Any, at: float) -> None:
        self.reach(at)
        self._deliver(actor, msg)

    def _deliver(self, actor: Actor, msg: Any) -> None:
        if self.stopped:
            return
        try:
            actor.receive(msg, self.now)
            self.delivered += 1
            self._after(actor)
        except Exception as error:  # noqa: BLE001 - an internal bug: it ends the run with its traceback
            self._fail(error)

    def _after(self, actor: Actor) -> None:
        """Send what `actor` queued, arm its wake-ups and publish its events."""
        if actor.outbox:
            out = actor.outbox
            actor.outbox = []
            self.network.count(out)
            endpoint = self._endpoints[actor.id]
            transport = endpoint.transport
            encode = self.codec.encode
            src = actor.id
            for dst, msg in out:
                data = STAMP.pack(time.time()) + encode(src, dst, msg)
                self.wire_bytes += len(data)
                if transport is not None:
                    transport.sendto(data, self.addresses[dst])
        if self._port:
            self._drain_port()

    def _drain_port(self) -> None:
        items = self._port[:]
        self._port.clear()
        now = self.now
        for item in items:
            cls = item.__class__
            if cls is WakeUp or cls is WakeAfter:
                actor = self.actors[item.actor]
                at = item.at if cls is WakeUp else now + item.delay
                at = max(at, now)
                self.loop.call_at(self.wall(at), self._wake, actor, item.key, at)
            else:
                self.publish(item)

    def _wake(self, actor: Actor, key: Any, at: float) -> None:
        if self.stopped:
            return
        try:
            actor.on_timer(key, self.reach(at))
            self.timer_events += 1
            self._after(actor)
        except Exception as error:  # noqa: BLE001
            self._fail(error)


def _call_on_tick(actor: Actor, now: float) -> None:
    actor.on_tick(now)
