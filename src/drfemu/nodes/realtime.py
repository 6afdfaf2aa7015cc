"""The runtime on the real clock: the virtual `Runtime` with one thing changed, when an instant is due.

Protocol time `t` falls at `start + t · time_scale` on the monotonic clock (`start` is when
protocol time 0 falls, `begin`); a tick of 100 ms at scale 0.1 fires every 10 ms of wall time.
Everything else — the heap of integer-µs instants, their order (deliveries, then periodic
drivers, then timers), the periodic drivers, the port, the event bus — is the virtual
runtime's own: `_pace` alone is overridden, as SimPy's real-time environment overrides only
its `step`. It waits until the real clock reaches the earliest instant, or until something
arrives from outside (`arrive`: a datagram, stamped with the clock's time) or the run is
stopped; a handler is given its instant's time, never an earlier one, and time never runs
backwards. How late the clock reached the current instant is `lateness`.

With the emulated `Network` as its links this paces an emulation to wall time; a live run gives
it datagram links (`nodes.live.DatagramLinks`) and the ids of the nodes it hosts.

Decision: an instant whose time has come runs at once, without a turn of the loop; after
`YIELD_EVERY` such instants in a row the runtime yields to the loop once, so sockets are read
while it catches up. An instant is never run before its time on the clock this reads; a timer
of the loop that fires early (uvloop rounds to the millisecond) only makes it look again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Sequence
from typing import Any

from drfemu.kernel.latency import US_PER_S, to_us
from drfemu.nodes.actor import Actor
from drfemu.nodes.network import Network
from drfemu.nodes.runtime import Links, Runtime
from drfemu.nodes.trace import EventTrace

__all__ = ["YIELD_EVERY", "RealtimeRuntime"]

YIELD_EVERY = 16
"""The most instants run in a row, each already due, before the runtime yields to its loop."""


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class RealtimeRuntime(Runtime):
    """A `Runtime` whose instants fall due on the real clock, `time_scale` wall seconds a protocol second."""

    def __init__(self, network: Network, actors: Sequence[Actor], trace: EventTrace | None = None, *,
                 time_scale: float = 1.0, hosted: Collection[int] | None = None, links: Links | None = None) -> None:
        if not time_scale > 0:
            raise ValueError("the time scale must be above 0")
        super().__init__(network, actors, trace, hosted=hosted, links=links)
        self.scale = time_scale
        self.start = time.monotonic()
        self.lateness = 0.0  # protocol seconds between the current instant's time and when the clock reached it
        self._in_a_row = 0

    def begin(self, start: float) -> None:
        """Protocol time 0 falls at `start` on the monotonic clock (`time.monotonic()`)."""
        self.start = start

    def elapsed(self) -> float:
        """Protocol time as the clock reads it now."""
        return (time.monotonic() - self.start) / self.scale

    def arrive(self, dst: int, msg: Any) -> None:
        """A message from outside (a datagram for hosted actor `dst`) is delivered at the clock's time now."""
        self._instant(max(self.now_us, to_us(self.elapsed()))).deliveries.append((dst, msg))
        self._rouse()

    async def _pace(self) -> int:
        """Wait until the clock reaches the earliest instant (or, with none, until one is made);
        then one instant may run."""
        loop = asyncio.get_running_loop()
        while not self._stopped:
            delay = None
            if self._due:
                delay = self.start + self._due[0] / US_PER_S * self.scale - time.monotonic()
                if delay <= 0:
                    self._in_a_row += 1
                    if self._in_a_row < YIELD_EVERY:
                        self.lateness = -delay / self.scale
                        return 1
                    self._in_a_row = 0
                    await asyncio.sleep(0)  # let the loop read the sockets while the runtime catches up
                    continue
            self._in_a_row = 0
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(delay, _wake, waiter) if delay is not None else None
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
        return 0
