"""The gradient overlays a node can run, by name (`--gradient`): ours (`tman`,
`overlay.gradient`) and the Kompics Toolbox's (`kompics`, `overlay.kompics_gradient`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from drfemu.overlay.gradient import Gradient
from drfemu.overlay.kompics_gradient import KompicsGradient

__all__ = ["GRADIENTS", "gradient_factory"]

GRADIENTS: dict[str, type] = {"tman": Gradient, "kompics": KompicsGradient}


def gradient_factory(name: str, *, temperature: float, shuffle_size: int) -> Callable[..., Any]:
    """What `OverlayPeer` calls to make its gradient view: the named variant, with the Kompics
    options bound when it is that one."""
    if name == "kompics":
        return functools.partial(KompicsGradient, temperature=temperature, shuffle_size=shuffle_size)
    return GRADIENTS[name]
