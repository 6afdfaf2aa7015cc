"""What a home server knows of the users homed on it (the `home` gateway, SPEC §3).

For each user: the `G_i` it last reported (a user's share travels with its tasks), its task
share `s_i`, its pending task, and whether that task is out being placed ("busy": a user has
one task at a time). The server's utility is eq. 4.2, `−min G_i` over its users, `−∞`
without any.

Tasks that end (finite workloads): a user reports a share that fell (`UserShare`), and says
when it has nothing waiting. Decision: such a user is *inactive* — it does not count in the
minimum until its next task arrives — so a user that stops asking never holds the others back
(thesis ch. 6); its falling share needs no message until then, since its next task carries
it. Finite users start inactive (they have submitted nothing yet); the thesis's endless users
start active at `G_i = 0`. `s_i` is the dominant share of the user's latest task (a finite
user's tasks need not share one demand).

A walk that found no room marks its user *saturated* (`mark_saturated`, on by default): it
then counts as `+∞` in that minimum, so a user that cannot grow does not hold up the rest
(thesis ch. 6). Decision: a bounded walk can miss the last servers with room, so the home
retries a marked user's walk after `saturation_retry` seconds, doubling the wait after every
further failure up to `retry_cap` (the server asks to be woken for it; the run chooses the first
wait, shorter when tasks end, and the cap: `schema.params.SATURATION_RETRY_TICKS`,
`RETRY_CAP_TICKS`). The user stays marked meanwhile — it
does not reappear in the utility, which would pull the gradient's centre back to it every
time — and a retry that finds room places the task; the user's next task then reports its
new share and ends the mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from drfemu.kernel.messages import TaskRequest, UserShare
from drfemu.kernel.resources import Vector, dominant_share

__all__ = ["HomeUser", "HomeUsers", "INF"]

INF = float("inf")


class HomeUser:
    """What a home server knows of one of its users."""

    __slots__ = ("share", "task_share", "pending", "busy", "saturated", "retry_wait", "active")

    def __init__(self, task_share: float, active: bool = True) -> None:
        self.share = 0.0  # G_i as the user last reported it
        self.task_share = task_share  # s_i: what one more task adds to G_i
        self.pending: TaskRequest | None = None  # the user's current task, once it arrived
        self.busy = False  # that task is out being placed
        self.saturated = False  # marked saturated: counts as +∞
        self.retry_wait = 0.0  # the wait before the next retry after a failure
        self.active = active  # it has a task waiting (or is an endless user): it counts

    def idle(self) -> bool:
        """The user has a task here that is not already being placed."""
        return self.pending is not None and not self.busy


class HomeUsers:
    """The users homed on one server, by id (ascending)."""

    __slots__ = ("records", "mark_saturated", "saturation_retry", "retry_cap", "saturated", "total", "resilient")

    def __init__(self, homed: Mapping[int, float], mark_saturated: bool = True, saturation_retry: float = INF,
                 total: Vector = (), active: bool = True, resilient: bool = False, retry_cap: float = INF) -> None:
        """`homed` maps each user homed here to its task share `s_i`; `total` is the cluster's
        capacity `C` (to read `s_i` off each arriving task; empty: keep `homed`'s); `active` is
        False for finite users, which count only once a task arrives; `resilient` (a run with
        faults): a task from a user not homed here makes it a homed user (the gateway re-homed it
        after a crash) instead of being a protocol error, and a repeated request for the task
        already here only refreshes the user's share (`task_arrived`); the retry wait doubles up
        to `retry_cap` seconds."""
        self.records = {user: HomeUser(share, active) for user, share in sorted(homed.items())}
        self.mark_saturated = mark_saturated
        self.saturation_retry = saturation_retry
        self.retry_cap = max(retry_cap, saturation_retry)
        self.saturated = 0  # users marked saturated now
        self.total = total
        self.resilient = resilient

    def __bool__(self) -> bool:
        return bool(self.records)

    def __iter__(self) -> Iterator[tuple[int, HomeUser]]:
        return iter(self.records.items())

    def counted(self) -> Iterable[tuple[int, HomeUser]]:
        """Users that count in the minimum share (active, not marked saturated)."""
        return ((u, r) for u, r in self.records.items() if r.active and not r.saturated)

    def min_share(self) -> float:
        """`min G_i` over the counted users; `+∞` when there are none."""
        if not self.records:  # most servers home no user, and every poll asks
            return INF
        low = None  # `min(share of counted(), default=INF)`, without a generator's frames: every poll asks
        for record in self.records.values():
            if record.active and not record.saturated and (low is None or record.share < low):
                low = record.share
        return INF if low is None else low

    def utility(self) -> float:
        """Eq. 4.2: `−min G_i`, `−∞` for a server without (counted) users."""
        return -self.min_share()

    def lowest(self, idle: bool = False, at_most: float = INF) -> tuple[int, HomeUser] | None:
        """The counted user with the lowest `(G_i, id)`, or None (run by every home every tick); with
        `idle`, of the users with a task to place; with `at_most`, of those with `G_i ≤ at_most`."""
        best_user, best = -1, None
        for user, record in self.records.items():  # ascending ids: a tie keeps the first
            if record.active and not record.saturated and record.share <= at_most \
                    and (best is None or record.share < best.share) and (not idle or record.idle()):
                best_user, best = user, record
        return None if best is None else (best_user, best)

    def task_arrived(self, msg: TaskRequest) -> None:
        """A homed user's next task, carrying its current share; ends a saturation mark.

        Decision (resilience on): a repeat of the task already here changes nothing but the
        share. The user repeats its request only because it heard nothing back; what the home
        could do about that it does itself — it re-places a task whose walk went silent
        (`ServerNode`'s walk timeout) and retries a saturated one on its own schedule — so a
        repeat must not end a saturation mark: near saturation every user repeats, and each
        repeat would otherwise put a user that cannot grow back at the bottom of the order."""
        record = self.records.get(msg.user)
        if record is not None and self.resilient and record.pending is not None and record.pending.task == msg.task:
            record.share = msg.share
            return
        if record is None:
            if not self.resilient:
                raise ValueError(f"user {msg.user} sent a task to a server it is not homed on")
            record = HomeUser(dominant_share(msg.demand, self.total) if self.total else 0.0)
            self.records = dict(sorted({**self.records, msg.user: record}.items()))
        record.share = msg.share
        record.pending = msg
        record.busy = False
        record.active = True
        if self.total:
            record.task_share = dominant_share(msg.demand, self.total)
        if record.saturated:
            record.saturated = False
            self.saturated -= 1

    def share_reported(self, msg: UserShare) -> bool:
        """A finite user's new `G_i`, and whether it still has a task waiting. Returns False for a
        user not homed here (a probe's random server keeps the share its copies carry)."""
        record = self.records.get(msg.user)
        if record is None:
            return False
        record.share = msg.share
        if not msg.waiting:
            record.pending = None
            record.busy = False
            record.active = False
            if record.saturated:
                record.saturated = False
                self.saturated -= 1
        return True

    def walk_failed(self, user: int, task: int, now: float) -> tuple[bool, float | None]:
        """The walk of `user`'s `task` found no room. Returns `(newly marked, retry time)`:
        whether the user was just marked saturated, and when to retry its walk (None: never)."""
        record = self.records[user]
        if record.pending is None or record.pending.task != task:
            return False, None
        record.busy = False
        if not self.mark_saturated:
            return False, None
        newly = not record.saturated
        if newly:
            record.saturated = True
            record.retry_wait = self.saturation_retry
            self.saturated += 1
        else:
            record.retry_wait = min(record.retry_wait * 2, self.retry_cap)
        return newly, now + record.retry_wait if record.retry_wait < INF else None

    def walk_went_silent(self, user: int, task: int, now: float) -> float | None:
        """The retried walk of saturated `user`'s `task` was never answered (a message of it was
        lost, or a server on its way crashed). Returns when to retry it (None: not wanted).

        Decision: silence is not evidence that the cluster is full, so the wait does not double
        as after a `WalkFailed` — under 20 % loss, doubling on every lost walk left a user that
        fits waiting longer than the run's stall window."""
        record = self.records[user]
        if not record.saturated or record.pending is None or record.pending.task != task:
            return None
        record.busy = False
        return now + record.retry_wait if record.retry_wait < INF else None

    def room_appeared(self) -> list[tuple[int, int]]:
        """A server rejoined, empty (issue 16): every user marked saturated may fit now. Returns
        the `(user, task)` whose walks to retry now (idle ones), with their waits started afresh."""
        due = []
        for user, record in self.records.items():
            if record.saturated and record.idle() and record.pending is not None:
                record.retry_wait = self.saturation_retry
                due.append((user, record.pending.task))
        return due

    def retry_due(self, user: int, task: int) -> bool:
        """Is a retry of `user`'s `task` still wanted (marked, that task, not being placed)?"""
        record = self.records[user]
        return record.saturated and record.idle() and record.pending is not None and record.pending.task == task
