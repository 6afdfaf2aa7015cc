"""How fault windows on one setting compose (issue 37): the value in force at any instant.

A setting is one thing a fault scenario changes: the loss of every message, of one message
type or of one directed link, or the network's latency. Each `loss` or `latency` event opens a
*window* on its setting at its `at`; an event with a `duration` closes it that long after
(half-open: `[at, at + duration)`), one without never closes it.

Rule (decision, `docs/faults.md`): the value in force is that of the **latest-started window
still open**; windows that start at the same instant count in scenario order (the later event
wins). When the last open window closes, the setting's base comes back: the scenario's own
`loss` or `loss_by_type`, the run's latency model. So nested and disjoint windows mean what
they did before, and windows that overlap without nesting, or touch back to back, mean what
they say: when one ends, the windows still open decide, never a value that was in force only
when it began.

`Windows` is pure bookkeeping: the injector opens and closes windows and applies the value it
returns; `value_at` is the same rule as a function of time, for checking.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Window", "Windows", "value_at"]

V = TypeVar("V")


class Windows(Generic[V]):
    """The open windows of one setting and its base value."""

    __slots__ = ("base", "_open")

    def __init__(self, base: V) -> None:
        self.base = base
        self._open: list[tuple[Hashable, V]] = []  # in the order they opened

    def open(self, key: Hashable, value: V) -> V:
        """Window `key` opens with `value`; returns the value now in force (its own)."""
        self._open.append((key, value))
        return value

    def close(self, key: Hashable) -> V:
        """Window `key` closes; returns the value now in force."""
        self._open = [(k, v) for k, v in self._open if k != key]
        return self.in_force()

    def in_force(self) -> V:
        return self._open[-1][1] if self._open else self.base


@dataclass(frozen=True)
class Window(Generic[V]):
    """One event's window: from `start` to `end` (math.inf: never closes), in scenario position `order`."""

    start: float
    end: float
    value: V
    order: int


def value_at(t: float, windows: Sequence[Window[V]], base: V) -> V:
    """The value in force at instant `t` by the rule above, computed directly from the windows."""
    open_now = [w for w in windows if w.start <= t < w.end]
    if not open_now:
        return base
    return max(open_now, key=lambda w: (w.start, w.order)).value

