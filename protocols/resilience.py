"""Resilience (issue 16): the timeouts and retries that let the handshake survive lost messages.

The thesis's protocols assume every message arrives. A run with a fault scenario switches on
one small layer in every node (and only then: a fault-free run is the thesis's, event by
event):
- a party that waits for an answer asks again after the retransmission timeout and doubles
  the wait after each further silence, up to `MAX_BACKOFF` × the timeout; progress (an answer)
  starts the waits again from the timeout;
- whoever receives a request again answers as it did the first time (task ids make every
  request idempotent: a task is never started twice);
- a server repeats the news of a task's end until its user (and the central scheduler)
  acknowledge it, since a lost `TaskEnded` would leave a share — or the scheduler's view of
  the room — wrong for ever.

Decision: the timeout is one allocation tick (an allocator answers at its next tick at the
latest) plus four round trips at the latency model's largest one-way latency, plus, where a
task may walk to find room, one hop per server the walk may visit (`walk_ttl`): the longest
answer a correct run can take. With the defaults (100 ms tick, 1 ms latency) that is 108 ms
for the central protocols and probes, backing off to 6.9 s; on 394 servers a walking
protocol's is 502 ms. A home that sent a task out to be placed re-places it when it hears nothing within the
timeout, backing off only to `PLACEMENT_BACKOFF` × the timeout: a placement is a walk of
several hops, each of which loss may take, so at 20 % loss on six servers three in four
attempts die, and waits growing to 64 × left tasks unplaced for longer than a stall (measured:
BDGDRF, Google 6 × 3, seed 20). A latency change during
the run can make answers slower than the timeout: the requests repeat, which costs messages
but, being idempotent, never places a task twice.
"""

from __future__ import annotations

__all__ = ["MAX_BACKOFF", "PLACEMENT_BACKOFF", "Backoff", "Notices", "retransmission_timeout"]

MAX_BACKOFF = 64
PLACEMENT_BACKOFF = 8  # a home re-places a silent task at most this many timeouts apart
ROUND_TRIPS = 4


def retransmission_timeout(max_latency: float, tick: float, walk_hops: int = 0) -> float:
    """The first wait before asking again, in seconds (see the module's decision)."""
    return tick + (walk_hops + ROUND_TRIPS * 2) * max_latency


class Backoff:
    """The waits of one retry chain: `timeout`, doubling up to `MAX_BACKOFF` × `timeout`."""

    __slots__ = ("timeout", "wait")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.wait = timeout

    def reset(self) -> float:
        """Start again (after progress); returns the first wait."""
        self.wait = self.timeout
        return self.wait

    def next(self) -> float:
        """The wait after one more silence."""
        self.wait = min(self.wait * 2.0, self.timeout * MAX_BACKOFF)
        return self.wait


class Notices:
    """Notices repeated, with back-off, until every party has acknowledged them.

    `add(key, parties)` starts one (returns the first wait); `ack(key, party)` records an
    answer; `due(key)` says, when its wait is up, who has still not answered and the next wait
    (None once everyone has). The node sends and asks to be woken; this only keeps the books.
    """

    __slots__ = ("timeout", "pending")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.pending: dict[object, tuple[set[int], Backoff]] = {}

    def add(self, key: object, parties: set[int]) -> float:
        backoff = Backoff(self.timeout)
        self.pending[key] = (parties, backoff)
        return backoff.wait

    def ack(self, key: object, party: int) -> None:
        waiting = self.pending.get(key)
        if waiting is not None:
            waiting[0].discard(party)
            if not waiting[0]:
                del self.pending[key]

    def drop(self, key: object) -> None:
        self.pending.pop(key, None)

    def due(self, key: object) -> tuple[list[int], float] | None:
        waiting = self.pending.get(key)
        if waiting is None:
            return None
        return sorted(waiting[0]), waiting[1].next()
