"""Types of `src/native/_ddrf.c`; the Python reference is `nodes.server.ServerNode.on_tick` with
`protocols.ddrf.DdrfRule.on_tick`."""

from typing import Any

def tick_method(cls: type) -> Any: ...
