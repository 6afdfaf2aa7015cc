"""Types of `src/native/_probe.c`; the Python references are `protocols.probe.ProbeRule.hear`,
`nodes.server.ServerNode.on_tick` with `ProbeRule.on_tick`, and `ProbeRule.load_replies`."""

from collections.abc import Callable
from typing import Any

def hear(rule: Any, server: Any, msg: Any, now: float) -> None: ...
def tick_method(cls: type) -> Any: ...
def replies_of(load_replies: Callable[..., Any], load_reply: Callable[..., Any], lowest_notice: Callable[..., Any],
               lowest: Callable[..., Any], /) -> Callable[[Any, Any], tuple[Any, ...]]: ...
