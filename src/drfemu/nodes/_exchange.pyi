"""Types of `src/native/_exchange.c`: the overlay peer's rounds and handlers in C, built for the
classes it is given; the Python reference is `nodes.overlay_peer.PYTHON_EXCHANGES`."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

def peer_methods(peer: type, cyclon: type, gradient: type, messages: Sequence[type],
                 functions: Sequence[Callable[..., Any]],
                 references: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]: ...
