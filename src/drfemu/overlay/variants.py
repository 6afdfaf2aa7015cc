"""The gradient overlays a node can run, by name (`--gradient`): ours (`tman`,
`overlay.gradient`) and the Kompics Toolbox's (`kompics`, `overlay.kompics_gradient`), and
the gradient's defaults that the run-parameter schema needs.

The names are declared here without importing the overlays, so the schema (and the sweep
and report stages above it) load neither them nor their C merges.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["GRADIENT_NAMES", "default_max_age_periods", "gradient_factory"]

GRADIENT_NAMES: tuple[str, ...] = ("tman", "kompics")


def default_max_age_periods(view: int) -> int:
    """Gradient descriptor expiry, in exchange periods, when none is given: max(20, 5·P).

    In a static overlay the oldest descriptor in any view was 14 periods old for P = 10 and 7
    for P = 2, so only stale copies expire (`docs/overlay.md`).
    """
    return max(20, 5 * view)


def gradient_factory(name: str, *, temperature: float, shuffle_size: int) -> Callable[..., Any]:
    """What `OverlayPeer` calls to make its gradient view: the named variant, with the Kompics
    options bound when it is that one."""
    if name == "kompics":
        from drfemu.overlay.kompics_gradient import KompicsGradient

        return functools.partial(KompicsGradient, temperature=temperature, shuffle_size=shuffle_size)
    if name == "tman":
        from drfemu.overlay.gradient import Gradient

        return Gradient
    raise ValueError(f"unknown gradient {name!r} (known: {', '.join(GRADIENT_NAMES)})")
