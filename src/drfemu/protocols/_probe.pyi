"""Types of `src/native/_probe.c`; the Python references are `protocols.probe.ProbeRule.hear` and
`nodes.server.ServerNode.on_tick` with `ProbeRule.on_tick`."""

from typing import Any

def hear(rule: Any, server: Any, msg: Any, now: float) -> None: ...
def tick_method(cls: type) -> Any: ...
