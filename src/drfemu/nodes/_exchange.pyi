"""Types of `src/native/_exchange.c`: the overlay peer's rounds and handlers in C, built for the
classes it is given (the Python reference is `nodes.overlay_peer.PYTHON_EXCHANGES`), and the lane
that carries their messages as rows (`nodes.overlay_peer.attach_lane`)."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

def peer_methods(peer: type, cyclon: type, gradient: type, messages: Sequence[type],
                 functions: Sequence[Callable[..., Any]],
                 references: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]: ...

@final
class Lane:
    """Overlay messages in flight as rows, for actors 0..n-1; `marks`: one object per kind
    (CyclonShuffle, CyclonReply, GradientShuffle, GradientReply), each of a class of its own."""

    open: bool
    @property
    def carried(self) -> tuple[int, int, int, int]: ...
    @property
    def in_flight(self) -> int: ...
    def __new__(cls, n: int, marks: tuple[Any, ...]) -> Lane: ...
    def message(self, dst: int, mark: Any) -> Any: ...
    def render(self, sends: list[tuple[int, Any]]) -> list[tuple[int, Any]]: ...
    def deliver(self, deliveries: list[tuple[int, Any]], mailboxes: list[list[Any]], actors: list[Any],
                inline_drain: list[bool], now: float, batch: list[tuple[int, Any]]) -> bool: ...
    def settle(self) -> None: ...
