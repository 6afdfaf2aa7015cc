"""Actors: private state, a mailbox, one handler per message type, an outbox, a port.

An actor never touches the clock, the network, the observer or another actor. The runtime
keeps its mailbox, wakes it once per instant with everything that arrived (`drain`), and
afterwards moves what the handlers put in the outbox. Besides its own state a handler has
three effects, each an append to a list the runtime empties:

- `send(dst, msg)` — a message to another actor (the outbox);
- `emit(event)` — a report for whoever observes the run (the port): a task started, a
  view froze. The node never learns who listens;
- `wake_at(at, key)` — ask to be woken at virtual time `at` (the port): the runtime calls
  `on_timer(key, now)` then. A wake-up cannot be cancelled; a node ignores one it no longer
  needs (e.g. by comparing `key` with its own state). `wake_after(delay, key)` is the same,
  `delay` seconds after the current instant, for code that is not handed `now`. Each kind of
  wake-up is a frozen class of its own (a `Wake`), and `on_timer` tells them apart by type.

Handlers therefore are plain functions of `(state, message, now)` and can be unit-tested by
calling them and reading `outbox` and `port`, with no event loop at all.

Handlers are declared with `kernel.messages.handles`; a message of a type the actor has
no handler for is a programming error and raises `UnhandledMessage`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.messages import collect_handlers

__all__ = ["Actor", "UnhandledMessage", "Wake", "WakeAfter", "WakeUp", "send_python"]


class UnhandledMessage(TypeError):
    """An actor received a message type it declares no handler for."""


class Wake:
    """A kind of wake-up: subclasses are frozen, slotted dataclasses, one per kind (a retry, a
    repeated notice), whose fields say which task or notice it is about; a node's `on_timer`
    dispatches on their type."""

    __slots__ = ()

    def trace_form(self) -> Hashable:
        """The key this wake-up was before wake-ups had classes: what the event trace writes, so
        that digests compare with those of earlier versions (`nodes.trace`)."""
        raise NotImplementedError(f"{type(self).__name__} has no trace form")


class WakeUp:
    """A node's request to be woken at `at` (seconds) with `key` (see `Actor.wake_at`)."""

    __slots__ = ("actor", "at", "key")

    def __init__(self, actor: int, at: float, key: Wake) -> None:
        self.actor = actor
        self.at = at
        self.key = key

    def __repr__(self) -> str:
        return f"WakeUp(actor={self.actor}, at={self.at!r}, key={self.key!r})"


class WakeAfter:
    """A node's request to be woken `delay` seconds after the current instant (see `Actor.wake_after`)."""

    __slots__ = ("actor", "delay", "key")

    def __init__(self, actor: int, delay: float, key: Wake) -> None:
        self.actor = actor
        self.delay = delay
        self.key = key

    def __repr__(self) -> str:
        return f"WakeAfter(actor={self.actor}, delay={self.delay!r}, key={self.key!r})"


class Actor:
    """Base class of every node role.

    `id` is a dense integer address assigned by whoever builds the emulation. `on_tick`
    is called by the runtime's tick driver for actors registered as tickers, except while the
    actor's `idle_tick` is true. The actor's own code sets it when its next `on_tick` would do
    nothing at all (send, emit, draw or change nothing) and clears it on any input that may
    change that: a server clears it whenever a task arrives, since that may home a user there.
    Meanwhile the driver skips the call and still counts it as a timer event, so no figure of a
    run moves (issue 57: a tick with nothing to do costs nothing).
    """

    __slots__ = ("id", "outbox", "port", "idle_tick")
    DISPATCH: ClassVar[dict[type, Callable[[Any, Any, float], None]]] = {}
    COMPILED_HANDLERS: ClassVar[dict[type, Callable[[Any, Any, float], None]]] = {}  # see collect_handlers

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.DISPATCH = collect_handlers(cls)

    def __init__(self, actor_id: int) -> None:
        self.id = actor_id
        self.outbox: list[tuple[int, Any]] = []
        self.port: list[Any] = []  # events and wake-ups; the runtime swaps in its own list
        self.idle_tick = False  # see the class docstring

    def send(self, dst: int, msg: Any) -> None:
        """Queue `msg` for actor `dst`; the runtime moves it after this wake-up."""
        self.outbox.append((dst, msg))

    def emit(self, event: Any) -> None:
        """Report `event` to the run's observers (the runtime publishes it after this wake-up)."""
        self.port.append(event)

    def wake_at(self, at: float, key: Wake) -> None:
        """Ask to be woken at virtual time `at` (seconds; not before the current instant)."""
        self.port.append(WakeUp(self.id, at, key))

    def wake_after(self, delay: float, key: Wake) -> None:
        """Ask to be woken `delay` seconds (≥ 0) after the current instant."""
        self.port.append(WakeAfter(self.id, delay, key))

    def on_timer(self, key: Any, now: float) -> None:
        """Called at the time a `wake_at(…, key)` asked for; dispatches on `type(key)`."""
        raise NotImplementedError(f"{type(self).__name__} asked to be woken but has no on_timer")

    def receive(self, msg: Any, now: float) -> None:
        """Handle one message now."""
        handler = self.DISPATCH.get(msg.__class__)
        if handler is None:
            raise UnhandledMessage(f"{type(self).__name__} has no handler for {type(msg).__name__}")
        handler(self, msg, now)

    def drain(self, messages: list[Any], now: float) -> None:
        """Handle a whole mailbox, in arrival order.

        Subclasses may override this to treat a mailbox as a batch; the runtime's C delivery
        loop (`src/native/_engine.c`) does the default itself for speed.
        """
        dispatch = self.DISPATCH
        try:
            for msg in messages:
                dispatch[msg.__class__](self, msg, now)
        except KeyError:
            self.check_handled(messages)
            raise

    def check_handled(self, messages: list[Any]) -> None:
        """Raise `UnhandledMessage` if any message has no handler."""
        for msg in messages:
            if msg.__class__ not in self.DISPATCH:
                raise UnhandledMessage(f"{type(self).__name__} has no handler for {type(msg).__name__}")

    def on_tick(self, now: float) -> None:
        """Called at every allocation tick for actors registered as tickers."""

    def take_outbox(self) -> list[tuple[int, Any]]:
        """Return and clear what the handlers sent (for tests and transports)."""
        out = self.outbox
        self.outbox = []
        return out

    def take_port(self) -> list[Any]:
        """Return and clear what the handlers emitted and the wake-ups they asked for."""
        port = self.port[:]
        self.port.clear()
        return port


send_python = Actor.send  # the reference for the C `send` below
if compiled_module("drfemu.nodes._engine") is not None:  # the same `send` in C (`src/native/_engine.c`)
    from drfemu.nodes._engine import send_method
    Actor.send = send_method(Actor)  # type: ignore[method-assign,assignment]  # a C function replaces the method
