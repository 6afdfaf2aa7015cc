"""Resilience (issue 16): the timeouts and retries that let the handshake survive lost messages.

The thesis's protocols assume every message arrives. A run with a fault scenario switches on
one small layer in every node (and only then: a fault-free run is the thesis's, event by
event):
- a party that waits for an answer asks again after a timeout and doubles the wait after each
  further silence, up to `MAX_BACKOFF` × the timeout; progress (an answer) starts the waits
  again from the timeout. Two timeouts (`Timeouts`): the *prompt* one for answers given on
  receipt — the gateway's, an allocator's `RequestAck`, a user's answer to a proposal, the
  start notice, an end's acknowledgement, a walk hop's `WalkAck` — and the full one for a
  proposal, which an allocator makes at a tick, once it has acknowledged the request;
- every allocator acknowledges a task request on receipt (`RequestAck`), so a lost request
  costs a prompt wait, not a tick and more;
- each hop of a placement walk is acknowledged by the server it reached (`WalkAck`), and the
  server that sent it sends it again until it is, `HOP_TRIES` times at most (prompt waits,
  doubling); the receiver acts on one copy of a walk and acknowledges every copy. A best-fit
  walk's choice travels as one more such hop (`nodes.server`);
- whoever receives a request again answers as it did the first time (task ids make every
  request idempotent: a task is never started twice);
- a server repeats the news of a task's end until its user (and the central scheduler)
  acknowledge it, since a lost `TaskEnded` would leave a share — or the scheduler's view of
  the room — wrong for ever.

Decision: the full timeout is one allocation tick (an allocator answers at its next tick at the
latest) plus four round trips at the latency model's largest one-way latency, plus, where a
task may walk to find room, one hop per server the walk may visit (`walk_ttl`): the longest
answer a correct run can take. With the defaults (100 ms tick, 1 ms latency) that is 108 ms
for the central protocols and probes, backing off to 6.9 s; on 394 servers a walking
protocol's is 502 ms. The prompt timeout is the four round trips alone (8 ms). A home that
sent a task out to be placed re-places it when it hears nothing within the full timeout,
backing off only to `PLACEMENT_BACKOFF` × the timeout (at 20 % loss, waits growing to 64 ×
left tasks unplaced for longer than a stall: BDGDRF, Google 6 × 3, seed 20). A latency
change during the run can make answers slower than the timeouts: the requests repeat, which
costs messages but, being idempotent, never places a task twice.

Why acknowledged hops and prompt waits (issue 37, measured on Google 20 × 5 at 20 % loss):
before them `dgdrf`, `pdgdrf` and `bdgdrf` stalled. A task that fits nowhere walks every
server, and its 20 hops and `WalkFailed`, each of which loss may take, all arrived once in 108
walks (0.8^21); its user was never marked saturated, stayed the lowest, and held the gradient's
centre, which re-placed it every timeout while the other users waited. With every wait a tick
long, BDGDRF's users, which DRF keeps within half a task of each other, each lost a tick or
more to almost every handshake and advanced at the pace of the slowest: its finite runs took
3–22 × as long as without loss, now 1.0–1.25 × (`docs/faults.md`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["HOP_TRIES", "MAX_BACKOFF", "PLACEMENT_BACKOFF", "Backoff", "Notices", "Timeouts", "prompt_timeout",
           "retransmission_timeout"]

MAX_BACKOFF = 64
PLACEMENT_BACKOFF = 8  # a home re-places a silent task at most this many timeouts apart
ROUND_TRIPS = 4
HOP_TRIES = 6  # a walk hop is sent at most this many times (at 20 % loss, all are lost once in 15,600)


def retransmission_timeout(max_latency: float, tick: float, walk_hops: int = 0) -> float:
    """The first wait before asking again, in seconds (see the module's decision)."""
    return tick + (walk_hops + ROUND_TRIPS * 2) * max_latency


class Timeouts(NamedTuple):
    """A run's first waits, in seconds; resilience is on when `answer` > 0 (a run with faults)."""

    answer: float = 0.0  # for an answer an allocator gives at a tick (`retransmission_timeout`)
    prompt: float = 0.0  # for one given on receipt (`prompt_timeout`)


def prompt_timeout(max_latency: float) -> float:
    """The first wait for an answer given as the request arrives, in seconds: `ROUND_TRIPS`
    round trips at the largest one-way latency (0.008 s at the default 1 ms)."""
    return ROUND_TRIPS * 2 * max_latency


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
