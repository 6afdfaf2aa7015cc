"""The runtime port: what nodes' set-up, observers and the environment may ask of a runtime.

Two runtimes implement it: `nodes.runtime.Runtime`, on a virtual clock, and
`nodes.realtime.RealtimeRuntime`, the same runtime on the real clock (live runs). Everything
that sets a run up or watches it — the harness, the ledger, the run log, the fault timeline,
the task lifetimes, the distributed set-up, the live worker — is written against this port,
never against one runtime, so the same code drives both.

Events travel on an `EventBus`: publish/subscribe by exact event type, handlers called in the
order they subscribed. A runtime owns one (nodes' events and the environment's go on it); the
live coordinator, which runs no nodes, has one of its own that the same observers subscribe to
(`Subscriber`: anything with `subscribe`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # types only: observers that name the port load no actor (the data stages import them)
    from drfemu.nodes.actor import Actor

__all__ = ["EventBus", "Hook", "PeriodicDriver", "RuntimePort", "Subscriber"]

E = TypeVar("E")

Hook = Callable[[float, int], None]
"""Called after a periodic driver's k-th firing: `hook(now, k)`."""


class EventBus:
    """Publish/subscribe by exact event type; `subscribe_all` handlers hear every event, after
    the typed ones. Handlers run in the order they subscribed, synchronously."""

    __slots__ = ("_typed", "_every")

    def __init__(self) -> None:
        self._typed: dict[type, list[Callable[[Any], None]]] = {}
        self._every: list[Callable[[Any], None]] = []

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        """Call `handler(event)` for every event whose class is `event_type`."""
        self._typed.setdefault(event_type, []).append(handler)

    def subscribe_all(self, handler: Callable[[Any], None]) -> None:
        """Call `handler(event)` for every event (a live worker forwards them all)."""
        self._every.append(handler)

    def publish(self, event: object) -> None:
        """Hand `event` to its subscribers now."""
        for handler in self._typed.get(event.__class__, ()):
            handler(event)
        for handler in self._every:
            handler(event)


class Subscriber(Protocol):
    """Where an observer subscribes to events: a runtime, or the live coordinator's bus."""

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        """Call `handler(event)` for every event of `event_type`."""


class PeriodicDriver(Protocol):
    """A periodic driver as its creator sees it (`nodes.runtime.Periodic` implements it)."""

    @property
    def fired(self) -> int:
        """How many times it has fired."""

    def cancel(self) -> None:
        """Fire no more."""


class RuntimePort(Protocol):
    """What may be asked of a runtime besides moving messages, virtual or real-time alike.

    Times are protocol seconds (`now`): virtual time in a virtual run; in a live run, the real
    clock's time since protocol time 0, divided by the time scale."""

    @property
    def now(self) -> float:
        """The current instant's protocol time (seconds)."""

    def every(self, period: float, actors: Iterable[Actor] = (), action: Callable[[Any, float], None] | None = None,
              hooks: Sequence[Hook] = ()) -> PeriodicDriver:
        """Call `action(actor, now)` on each of `actors` this runtime hosts every `period` seconds,
        then `hooks(now, k)`; a driver without actors only runs its hooks."""

    def start_ticks(self, period: float, tickers: Iterable[Actor]) -> PeriodicDriver:
        """The allocation tick: `on_tick(now)` on `tickers` every `period` seconds."""

    def add_tick_hook(self, hook: Hook) -> None:
        """Call `hook(now, k)` after every allocation tick."""

    def call_at(self, at: float, callback: Callable[[float], None], actor: Actor | None = None) -> None:
        """Run `callback(now)` at time `at` (not before now); with `actor`, as that actor's timer
        (skipped if it is down, or hosted elsewhere), its outbox moved afterwards."""

    def deliver_at(self, at: float, dst: int, msg: Any) -> None:
        """An input from actor `dst`'s own machine (a task's exit) at time `at`, not network traffic."""

    def inject(self, actor: Actor) -> None:
        """Move what `actor` queued outside a handler (at start-up)."""

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        """Call `handler(event)` for every event of `event_type` a node emits or `publish` hands on."""

    def publish(self, event: object) -> None:
        """An event of the run's environment (a crash), to its subscribers, now."""

    def stop(self, result: Any = None) -> None:
        """End the run: nothing more is delivered or fired; `run()` returns `result`."""

    @property
    def stopped(self) -> bool:
        """Has the run ended (stopped, or failed)?"""

    async def run(self) -> Any:
        """Run until `stop` (returning its result) or a handler raises (raising it)."""
