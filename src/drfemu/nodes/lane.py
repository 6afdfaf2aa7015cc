"""The runtime's side of a lane (issue 57): messages in flight as rows, and what keeps them exact.

A lane (the overlay plane of `nodes.plane.attach_plane`, `src/native/_plane.c`) carries a
message to actor `d` as a row in `d`'s queue, and the lists of sends hold a mark of its type in
the message's place; an instant that carries marks, the lane delivers itself (`Lane.deliver`).
The k-th mark `d` receives stands for the k-th row of its queue as long as every send of an
instant arrives at one later instant in the order sent: a fixed latency. So before the network
changes, `keep_lane_exact`'s callback puts in place of every mark still in a mailbox or an
instant the message its row stands for (`materialize`), and it keeps the lane open only while
the latency is fixed. (`docs/architecture.md`, "Overlay messages as rows".)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["Lane", "Pending", "keep_lane_exact", "materialize"]


class Lane(Protocol):
    """Messages in flight as rows: a list of sends holds, for each, a mark of its type, and the
    lane keeps each destination's rows in the order they were sent."""

    open: bool  # are rows being made?

    @property
    def in_flight(self) -> int:
        """Rows made and not yet taken."""

    def message(self, dst: int, mark: Any) -> Any:
        """The message `dst`'s next row stands for (of `mark`'s type), taken off the lane."""

    def render(self, sends: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """`sends` with every mark replaced by the message its row stands for (nothing taken)."""

    def deliver(self, deliveries: list[tuple[int, Any]], mailboxes: list[list[Any]], actors: list[Any],
                inline_drain: list[bool], now: float, batch: list[tuple[int, Any]]) -> bool:
        """An instant's delivery phase that carries marks, as the runtime's `deliver` would do it
        (True); False, with nothing done, when it is not one the lane takes."""

    def settle(self) -> None:
        """While `deliver` runs, the marks it has not handled become, in the deliveries, the
        messages they stand for (their rows taken, in order)."""

    def fire(self, actors: list[Any], action: Any, now: float, batch: list[tuple[int, Any]] | None,
             flush: Callable[[Any], None], skip_idle: bool) -> None:
        """A periodic driver's round, as the runtime's `fire_each` (its reference) does it."""


class Pending(Protocol):
    """An instant to come, as the runtime keeps it: its deliveries in order."""

    @property
    def deliveries(self) -> list[tuple[int, Any]]: ...


def materialize(lane: Lane, mailboxes: list[list[Any]], instants: Mapping[int, Pending], marks: dict[type, type]) -> None:
    """Put in place of every mark (an object of a class in `marks`) in the mailboxes and the
    instants to come the message its row stands for, in the order they arrive: this instant's
    (those the lane is delivering, then the mailboxes), then instant by instant."""
    lane.settle()
    for dst, mailbox in enumerate(mailboxes):
        for at, msg in enumerate(mailbox):
            if msg.__class__ in marks:
                mailbox[at] = lane.message(dst, msg)
    for at_us in sorted(instants):
        deliveries = instants[at_us].deliveries
        for at, (dst, msg) in enumerate(deliveries):
            if msg.__class__ in marks:
                deliveries[at] = (dst, lane.message(dst, msg))


def keep_lane_exact(lane: Lane, mailboxes: list[list[Any]], instants: Mapping[int, Pending],
                    marks: dict[type, type]) -> Callable[[int], None]:
    """What the network calls, with its fixed latency in µs (or -1), whenever it changes: rows in
    flight become messages, and the lane stays open only under a fixed latency. It holds the
    runtime's tables, not the runtime, so the network and the runtime make no cycle."""
    def network_changes(fixed_us: int) -> None:
        if lane.in_flight:
            materialize(lane, mailboxes, instants, marks)
        lane.open = fixed_us >= 0

    return network_changes
