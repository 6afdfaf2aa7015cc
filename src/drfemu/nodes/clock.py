"""An asyncio event loop whose clock is virtual.

`VirtualClockLoop.time()` returns a virtual time that only moves when the loop has nothing
ready to run: it then jumps straight to the earliest scheduled callback, so an emulation
takes as long as its callbacks take to execute, and it does so deterministically.

Decision: when the loop has neither ready callbacks nor scheduled timers it would block
forever on real I/O, which in an emulation means nothing can ever happen again; the loop
raises `VirtualClockIdle` instead of hanging. Real-time runs use an ordinary loop (uvloop
where installed); nothing else in the runtime depends on which clock is used.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

__all__ = ["VirtualClockIdle", "VirtualClockLoop", "run_virtual"]

T = TypeVar("T")


class VirtualClockIdle(RuntimeError):
    """The virtual loop has nothing scheduled and nothing ready: it can never wake again."""


class _JumpingSelector:
    """Wraps the loop's selector: a wait becomes a jump of the virtual clock."""

    __slots__ = ("_loop", "_selector")

    def __init__(self, loop: VirtualClockLoop, selector: selectors.BaseSelector) -> None:
        self._loop = loop
        self._selector = selector

    def select(self, timeout: float | None = None) -> list[Any]:
        loop = self._loop
        if timeout is None:
            # No timers, nothing ready: poll once for genuine I/O, else we are idle forever.
            events = self._selector.select(0)
            if not events:
                raise VirtualClockIdle("virtual clock idle: no event is scheduled and none is ready")
            return events
        if timeout > 0:
            scheduled = loop._scheduled  # type: ignore[attr-defined]
            loop._vnow = scheduled[0]._when if scheduled else loop._vnow + timeout
            return []
        return self._selector.select(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """A selector event loop on a virtual clock that starts at `start` seconds."""

    def __init__(self, start: float = 0.0) -> None:
        super().__init__()
        self._vnow = float(start)
        wrapped: selectors.BaseSelector = self._selector  # type: ignore[has-type]  # asyncio's own, untyped
        self._selector = cast(selectors.BaseSelector, _JumpingSelector(self, wrapped))
        # Callbacks due within this margin of "now" run now; instants are >= 1 µs apart.
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self._vnow

    def jump_if_idle(self, when: float) -> bool:
        """Move the clock to `when` and return True when the loop would do exactly that next:
        nothing is ready to run and no timer is due before `when` (a caller holding the loop's
        next timer may then run it in place, without a turn of the loop); else False."""
        if self._ready or (self._scheduled and self._scheduled[0]._when <= when):  # type: ignore[attr-defined]
            return False
        self._vnow = when
        return True


def run_virtual(main: Coroutine[Any, Any, T], start: float = 0.0) -> T:
    """Run `main` to completion on a fresh virtual-clock loop and close the loop."""
    loop = VirtualClockLoop(start)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
