"""The runtime: moves messages between actors and fires timers on an asyncio loop.

Design (SPEC §2, "Speed"):
- Time is kept in integer microseconds. Everything due at the same instant — message
  deliveries, timers, the allocation tick — shares one `_Instant` and one asyncio handle.
- At an instant, deliveries go first, in the order they were sent: each message is put in
  its destination's mailbox, then every actor that received something is woken once and
  drains its whole mailbox; then timers run in the order they were set. After each wake-up
  the runtime moves what the actor put in its outbox through the `Network`.
- The periodic tick of all ticking actors is one timer that re-arms itself at `k · period`
  (never by accumulating floats) and calls `on_tick` on every ticker in registration order.

A run ends when something calls `stop(result)`: `finished` (an asyncio future) then holds
`result`. An exception raised by any handler, tick or timer stops the runtime and is set on
`finished`, so it surfaces where the run is awaited instead of being logged by the loop.

Same actors, same seed ⇒ the same events in the same order, on any machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nodes.actor import Actor
from nodes.network import US_PER_S, Network, to_us

__all__ = ["Runtime"]


class _Instant:
    __slots__ = ("deliveries", "timers")

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, Any]] = []
        self.timers: list[tuple[Actor | None, Callable[[float], None]]] = []


class Runtime:
    """Runs a set of actors on an asyncio loop (normally a `VirtualClockLoop`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, network: Network, actors: Sequence[Actor]) -> None:
        for index, actor in enumerate(actors):
            if actor.id != index:
                raise ValueError(f"actor ids must be 0..n-1 in order; position {index} holds id {actor.id}")
        self.loop = loop
        self.network = network
        self.actors: list[Actor] = list(actors)
        self._mailboxes: list[list[Any]] = [[] for _ in self.actors]
        self._inline_drain = [type(actor).drain is Actor.drain for actor in self.actors]
        self.now_us = to_us(loop.time())
        self.delivered = 0
        self.timer_events = 0
        self.stopped = False
        self.finished: asyncio.Future[Any] = loop.create_future()
        self._instants: dict[int, _Instant] = {}
        self._tickers: list[Actor] = []
        self._tick_hooks: list[Callable[[float, int], None]] = []
        self._tick_period_us = 0
        self._tick_count = 0

    # -- time -----------------------------------------------------------------------------
    @property
    def now(self) -> float:
        """Current time of the runtime in seconds."""
        return self.now_us / US_PER_S

    def _instant(self, at_us: int) -> _Instant:
        instant = self._instants.get(at_us)
        if instant is None:
            instant = self._instants[at_us] = _Instant()
            self.loop.call_at(at_us / US_PER_S, self._run_instant, at_us)
        return instant

    # -- scheduling -----------------------------------------------------------------------
    def call_at(self, at: float, callback: Callable[[float], None], actor: Actor | None = None) -> None:
        """Run `callback(now)` at time `at` (seconds); then flush `actor`'s outbox if given."""
        at_us = max(to_us(at), self.now_us)
        self._instant(at_us).timers.append((actor, callback))

    def start_ticks(self, period: float, tickers: Iterable[Actor]) -> None:
        """Tick `tickers` every `period` seconds, the first time one period after time 0."""
        period_us = to_us(period)
        if period_us <= 0:
            raise ValueError("tick period must be at least 1 µs")
        self._tick_period_us = period_us
        self._tickers = list(tickers)
        self._tick_count = 0
        self._arm_next_tick()

    def add_tick_hook(self, hook: Callable[[float, int], None]) -> None:
        """Call `hook(now, tick_number)` after every tick (observers: stall checks, progress)."""
        self._tick_hooks.append(hook)

    def _arm_next_tick(self) -> None:
        self._tick_count += 1
        self._instant(self._tick_count * self._tick_period_us).timers.append((None, self._tick))

    def _tick(self, now: float) -> None:
        flush = self._flush
        for actor in self._tickers:
            actor.on_tick(now)
            if actor.outbox:
                flush(actor)
        self.timer_events += len(self._tickers)
        for hook in self._tick_hooks:
            hook(now, self._tick_count)
        if not self.stopped:
            self._arm_next_tick()

    def stop(self, result: Any = None) -> None:
        """Stop processing (nothing more is delivered or fired) and resolve `finished`."""
        self.stopped = True
        if not self.finished.done():
            self.finished.set_result(result)

    def _fail(self, error: BaseException) -> None:
        self.stopped = True
        if not self.finished.done():
            self.finished.set_exception(error)

    # -- delivery -------------------------------------------------------------------------
    def _flush(self, actor: Actor) -> None:
        out = actor.outbox
        actor.outbox = []
        network = self.network
        network.count(out)
        now_us = self.now_us
        fixed_us = network.fixed_us
        if fixed_us >= 0:
            due = now_us + fixed_us
            instant = self._instants.get(due)
            if instant is None:
                instant = self._instant(due)
            instant.deliveries += out
            return
        src = actor.id
        due_of = network.due
        instants = self._instants
        for item in out:
            due = due_of(src, item[0], item[1], now_us)
            if due < 0:
                continue
            instant = instants.get(due)
            if instant is None:
                instant = self._instant(due)
            instant.deliveries.append(item)

    def inject(self, actor: Actor) -> None:
        """Send what `actor` queued outside a handler (e.g. at start-up) now."""
        if actor.outbox:
            self._flush(actor)

    def _run_instant(self, at_us: int) -> None:
        instant = self._instants.pop(at_us)
        if self.stopped:
            return
        try:
            self._process(instant, at_us)
        except Exception as error:  # noqa: BLE001 - handed to whoever awaits `finished`
            self._fail(error)

    def _process(self, instant: _Instant, at_us: int) -> None:
        self.now_us = at_us
        now = at_us / US_PER_S
        deliveries = instant.deliveries
        if deliveries:
            mailboxes = self._mailboxes
            ready: list[int] = []
            for dst, msg in deliveries:
                mailbox = mailboxes[dst]
                if not mailbox:
                    ready.append(dst)
                mailbox.append(msg)
            self.delivered += len(deliveries)
            actors = self.actors
            inline_drain = self._inline_drain
            flush = self._flush
            for dst in ready:
                actor = actors[dst]
                messages = mailboxes[dst]
                mailboxes[dst] = []
                if inline_drain[dst]:
                    # The common case, inlined: dispatch each message to its handler.
                    dispatch = actor.DISPATCH
                    try:
                        for msg in messages:
                            dispatch[msg.__class__](actor, msg, now)
                    except KeyError:
                        actor.check_handled(messages)
                        raise
                else:
                    actor.drain(messages, now)
                if actor.outbox:
                    flush(actor)
        for owner, callback in instant.timers:
            if self.stopped:
                return
            callback(now)
            self.timer_events += 1
            if owner is not None and owner.outbox:
                self._flush(owner)

    @property
    def pending_instants(self) -> int:
        return len(self._instants)
