"""The seam through which nodes report allocations to the emulator's observer.

Nodes never read it back: the observer (the harness) has global knowledge the protocols must
not use. In live mode the same calls can be forwarded to a collector.
"""

from __future__ import annotations

from typing import Protocol

from protocols.resources import Vector

__all__ = ["AllocationMonitor"]


class AllocationMonitor(Protocol):
    def on_allocation(self, now: float, server: int, user: int, task: int, demand: Vector) -> None:
        """A task of `user` started on `server` at `now`."""
