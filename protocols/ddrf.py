"""DDRF (thesis Algorithm 5, eq. 3.8; SPEC §4 `ddrf-random`, `ddrf-gradient`).

Each tick a home server takes its users in ascending `(G_i, id)` and allocates for the first
one with a pending task whose `G_i` is at most the minimum share every neighbour last
reported (`+∞` until a neighbour has reported: Algorithm 5 starts its table at ∞). Then it
asks every neighbour for its current minimum share; the request carries the sender's own
value, which the receiver records too (Algorithm 5's `ONRESOURCEUPDATEREQ`), so knowledge
flows both ways along a link. A server reports `+∞` when it has no counted users.

The neighbour set is fixed for the run: `P` uniformly random servers (`ddrf-random`), or the
gradient views once the overlay has converged at start (`ddrf-gradient`; the runner freezes
it). Decision: only servers with users tick and poll — the thesis notes the others need not
(§4.3) — so the measured cost is `2·|homes|·P` messages a tick against eq. 4.3's worst case
`2·|S|·P`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from nodes.actor import handles
from nodes.messages import message
from nodes.server import INF, HomeServer

__all__ = ["DdrfServer", "MinShareReply", "MinShareRequest"]


@message
class MinShareRequest:
    """Asks a neighbour for its minimum share; carries the sender's own."""

    sender: int
    share: float
    WIRE: ClassVar[tuple[int, int]] = (1, 1)


@message
class MinShareReply:
    """A server's current minimum share."""

    sender: int
    share: float
    WIRE: ClassVar[tuple[int, int]] = (1, 1)


class DdrfServer(HomeServer):
    """A DDRF home server; `neighbours` is set by the runner (random, or the frozen gradient)."""

    __slots__ = ("reported", "active")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.reported: dict[int, float] = {}
        self.active = True  # ddrf-gradient: False until the overlay is frozen

    def set_neighbours(self, neighbours: Iterable[int]) -> None:
        super().set_neighbours(neighbours)
        self.reported = {n: INF for n in self.neighbours}

    def on_tick(self, now: float) -> None:
        if not self.active:
            return
        self.retry_saturated(now)
        bound = min(self.reported.values(), default=INF)  # eq. 3.8 as Algorithm 5 tests it: G_i ≤ bound
        for user, record in sorted(self.counted(), key=lambda item: (item[1].share, item[0])):
            if record.idle() and record.share <= bound:
                self.allocate(user, record)
                break
        request = MinShareRequest(self.id, self.min_share())
        for neighbour in self.neighbours:
            self.send(neighbour, request)

    @handles(MinShareRequest)
    def on_min_share_request(self, msg: MinShareRequest, now: float) -> None:
        self.reported[msg.sender] = msg.share
        self.send(msg.sender, MinShareReply(self.id, self.min_share()))

    @handles(MinShareReply)
    def on_min_share_reply(self, msg: MinShareReply, now: float) -> None:
        self.reported[msg.sender] = msg.share
