"""Actors: private state, a mailbox, one handler per message type, an outbox.

An actor never touches the clock, the network or another actor. The runtime keeps its
mailbox, wakes it once per instant with everything that arrived (`drain`), and afterwards
moves whatever the handlers put in the outbox. Handlers therefore are plain
functions of `(state, message, now)` whose only effect besides the actor's own state is
`self.send(dst, msg)` — which appends to a list — so they can be unit-tested by calling them
and reading `outbox`, with no event loop at all.

Handlers are declared with `@handles(MessageType)`; a message of a type the actor has no
handler for is a programming error and raises `UnhandledMessage`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

__all__ = ["Actor", "UnhandledMessage", "handles"]

F = TypeVar("F", bound=Callable[..., None])


class UnhandledMessage(TypeError):
    """An actor received a message type it declares no handler for."""


def handles(*message_types: type) -> Callable[[F], F]:
    """Mark a method `(self, msg, now) -> None` as the handler of `message_types`."""

    def mark(fn: F) -> F:
        fn.__handles__ = message_types  # type: ignore[attr-defined]
        return fn

    return mark


class Actor:
    """Base class of every node role.

    `id` is a dense integer address assigned by whoever builds the emulation. `on_tick`
    is called by the runtime's tick driver for actors registered as tickers.
    """

    __slots__ = ("id", "outbox")
    DISPATCH: ClassVar[dict[type, Callable[[Any, Any, float], None]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dispatch: dict[type, Callable[[Any, Any, float], None]] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                for message_type in getattr(value, "__handles__", ()):
                    dispatch[message_type] = value
        cls.DISPATCH = dispatch

    def __init__(self, actor_id: int) -> None:
        self.id = actor_id
        self.outbox: list[tuple[int, Any]] = []

    def send(self, dst: int, msg: Any) -> None:
        """Queue `msg` for actor `dst`; the runtime moves it after this wake-up."""
        self.outbox.append((dst, msg))

    def receive(self, msg: Any, now: float) -> None:
        """Handle one message now."""
        handler = self.DISPATCH.get(msg.__class__)
        if handler is None:
            raise UnhandledMessage(f"{type(self).__name__} has no handler for {type(msg).__name__}")
        handler(self, msg, now)

    def drain(self, messages: list[Any], now: float) -> None:
        """Handle a whole mailbox, in arrival order.

        Subclasses may override this to treat a mailbox as a batch; the runtime inlines the
        default for speed, so an override is the only reason to call it.
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
