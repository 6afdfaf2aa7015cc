"""What an observer of a run is: something that watches the run (through the runtime's events,
ticks and timers) and, once it has ended, contributes its typed sections of the result
(`schema.result`). A run (`assembly.run.Run`) owns a list of them; the live coordinator feeds the
same observers from its workers' events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from drfemu.schema.result import Engine, Section

__all__ = ["Observer", "RunEnd"]


@dataclass(frozen=True, slots=True)
class RunEnd:
    """What an observer may read once its run has ended: when it ended (`now`, virtual seconds),
    what it cost (`wall` seconds, `events`, `ticks`), its allocations, each user's own counts of
    its tasks (`users`, by actor) and how many tasks the workload had submitted by then
    (`submitted`; None for endless users)."""

    now: float
    wall: float
    events: int
    ticks: int
    allocations: int
    users: Mapping[int, Mapping[str, int]]
    submitted: int | None

    def engine(self) -> Engine:
        """The engine's figures: wall time, events and their rate, ticks."""
        return Engine(wall_time_s=self.wall, events=self.events,
                      events_per_s=self.events / self.wall if self.wall > 0 else 0.0, ticks=self.ticks)


class Observer(Protocol):
    """Contributes its sections of a run's result once the run has ended."""

    def sections(self, end: RunEnd) -> Sequence[Section]: ...
