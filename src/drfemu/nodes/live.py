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
errors (a full socket buffer), bytes on the wire.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import time
from collections.abc import Mapping
from functools import partial

from drfemu.nodes.actor import Actor
from drfemu.nodes.network import Network
from drfemu.nodes.realtime import RealtimeRuntime
from drfemu.nodes.wire import Codec, WireError

__all__ = ["LATENCY_BINS", "LATENCY_BINS_PER_DECADE", "LATENCY_FLOOR_S", "STAMP", "DatagramLinks", "latency_bin"]

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
    """The socket of one local node: hands every datagram to the links."""

    __slots__ = ("links", "node", "transport")

    def __init__(self, links: DatagramLinks, node: int) -> None:
        self.links = links
        self.node = node
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Address) -> None:
        self.links._receive(self.node, data, addr)

    def error_received(self, exc: Exception) -> None:
        self.links.send_errors += 1


class DatagramLinks:
    """The links of the nodes a `RealtimeRuntime` hosts: a socket each, bound by `open`."""

    def __init__(self, network: Network, codec: Codec) -> None:
        """`network` only counts what is sent, by type (the result's traffic); the latency of the
        real network is measured (`latency_histogram`), not modelled."""
        self.network = network
        self.codec = codec
        self.runtime: RealtimeRuntime | None = None
        self.addresses: dict[int, Address] = {}
        self._sender_of: dict[Address, int] = {}
        self._endpoints: dict[int, _Endpoint] = {}
        self.rejected: dict[str, int] = {}
        self.send_errors = 0
        self.latency_histogram = [0] * LATENCY_BINS  # one-way latencies (wall), binned by `latency_bin`
        self.wire_bytes = 0

    async def open(self, runtime: RealtimeRuntime, addresses: Mapping[int, Address]) -> None:
        """Bind a socket for each of `runtime`'s hosted nodes at its address in `addresses`
        (port 0: any free one), and hand what they receive to `runtime`."""
        self.runtime = runtime
        loop = asyncio.get_running_loop()
        for node in sorted(addresses):
            host, port = addresses[node]
            endpoint = _Endpoint(self, node)
            await loop.create_datagram_endpoint(partial(_itself, endpoint), local_addr=(host, port),
                                                family=socket.AF_INET)
            self._endpoints[node] = endpoint
        self.set_addresses(addresses)

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

    def flush(self, actor: Actor) -> None:
        """Send `actor`'s outbox, a datagram a message, each led by the wall clock's time."""
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

    def _receive(self, node: int, data: bytes, addr: Address) -> None:
        runtime = self.runtime
        if runtime is None or runtime.stopped:
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
        if runtime.actors[node].DISPATCH.get(msg.__class__) is None:
            self._reject("no handler")
            return
        runtime.arrive(node, msg)

    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
