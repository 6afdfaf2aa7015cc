"""Types of `src/native/_probe.c`; the Python reference is `protocols.probe.ProbeRule.hear`."""

from typing import Any

def hear(rule: Any, server: Any, msg: Any, now: float) -> None: ...
