"""The user roles (thesis Algorithm 3, SPEC §3).

Both run the thesis's handshake for one task at a time: ask the gateway for a server, send the
task (with the user's current `G_i`) there, accept the first proposal for the current task and
decline any later one, and, once told the task runs, count it and move on to the next task.
Each reports what happens to its tasks as events (`TaskSubmitted`, `TaskDispatched`) for the
run's ledger.

`UserNode` is the thesis's endless user: one demand vector, a next task as soon as the last
started, `G_i = n_i · s_i`. `FiniteUserNode` submits a given list of tasks at their submit
times (they queue at the user, in order), and its tasks end: `G_i` is the dominant share of
what its running tasks hold, falling when one ends. Decision: when `G_i` changes while a task
of its waits at an allocator, it tells that allocator (`UserShare`), so the order the
allocator keeps is never older than one message; when its last queued task starts, it tells
the allocator it has nothing waiting (`UserShare(waiting=False)`), so an idle user never
counts in a home's utility (the lowest user that stops asking, thesis ch. 6).

With resilience on (`rto` > 0, a run with faults; `protocols.resilience`) a user that hears
nothing about its current task asks again: the gateway while it has no allocator, the
allocator while it has no proposal, the proposer while its accepted task has not started —
after the prompt wait for an answer given on receipt (the gateway's, the allocator's
`RequestAck`, the start notice) and after the full one once the allocator holds the task. A
repeated proposal from the proposer it accepted is answered with `Accept` again, and every
`TaskEnded` is acknowledged (`EndAck`), a repeated one without counting it twice. A finite
user repeats its "nothing waiting" notice until the allocator acknowledges it (`ShareAck`)
or its next task goes out.

Crashes (issue 16; the run's failure detector delivers `PeerDown`): a user gives up every task
that ran on the crashed server — its `G_i` falls at once, and it tells its allocator so — and
submits each again under a new task id (`TaskResubmitted`; a finite user queues the copy behind
its waiting tasks, an endless user's next task is that demand anyway). It gives up its current
task too, and sends it again under a new id, when the server placing it crashed: its home or
probe target before it accepted a proposal, its proposer after. A new id keeps every late
message about the old one harmless (a proposal for it is declined, it can never start). The
central scheduler is different (`durable_allocator`): it rebuilds what it knew from the
resource nodes when it restarts, so a user of a central protocol keeps its task and id and
simply keeps asking. A scheduler that cannot place an accepted task says so (`Forgotten`: it
restarted before launching it, or it was launched on a server that crashed — the user may
never have heard it start); the user then sends it again under a new id, as above.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from drfemu.kernel.events import TaskDispatched, TaskResubmitted, TaskSubmitted
from drfemu.kernel.messages import (
    Accept,
    Decline,
    EndAck,
    Forgotten,
    PeerDown,
    PeerUp,
    Proposal,
    RequestAck,
    ServerReply,
    ServerRequest,
    ShareAck,
    TaskEnded,
    TaskRequest,
    TaskStarted,
    UserShare,
    handles,
)
from drfemu.kernel.resources import Vector, dominant_share
from drfemu.nodes.actor import Actor
from drfemu.nodes.wakes import RepeatIdle, Reprobe, RetryTask, SubmitDue
from drfemu.protocols.resilience import Backoff

__all__ = ["FiniteUserNode", "UserNode"]



class _HandshakeUser(Actor):
    """The user's side of the handshake shared by both roles: take the first proposal for the
    current task, decline every other; with resilience on, ask again when nothing is heard."""

    __slots__ = ("gateway", "accepted", "allocator", "acknowledged", "proposer", "backoff", "prompt", "attempt",
                 "durable_allocator", "where", "reprobe", "probes", "known_down")

    def __init__(self, actor_id: int, gateway: int, rto: float, durable_allocator: bool = False,
                 prompt: float = 0.0, reprobe: float = 0.0) -> None:
        super().__init__(actor_id)
        self.reprobe = reprobe  # > 0: ask the gateway again after this long without a proposal (probes)
        self.probes = 0  # the current task's requests sent, so a stale re-probe wake-up is ignored
        self.gateway = gateway
        self.accepted = False
        self.allocator = -1  # where the current task was sent, once the gateway answered
        self.acknowledged = False  # the allocator acknowledged the current task (resilience on)
        self.proposer = -1  # whose proposal for the current task was accepted
        self.backoff = Backoff(rto) if rto > 0 else None  # waits for a proposal (given at an allocator's tick)
        self.prompt = Backoff(prompt or rto) if rto > 0 else None  # for the gateway's answer, the start notice
        self.attempt = 0  # numbers the retry chains, so a stale wake-up is ignored
        self.durable_allocator = durable_allocator  # the allocator restarts with what it knew
        self.where: dict[int, int] = {}  # with resilience on: running task -> its server
        self.known_down: set[int] = set()  # servers the failure detector reported down, not yet back

    def current_task(self) -> int:
        raise NotImplementedError

    def task_request(self) -> TaskRequest:
        """The current task's request, carrying the user's `G_i` now."""
        raise NotImplementedError

    def _ask_gateway(self, now: float) -> None:
        self.accepted = False
        self.allocator = -1
        self.acknowledged = False
        self.proposer = -1
        self.send(self.gateway, ServerRequest(self.id))
        self._arm(now, fresh=True)

    def _arm(self, now: float, fresh: bool) -> None:
        """(Re)start the retry chain of the current task (resilience on). Decision: the wait is
        the prompt one while the answer awaited is given on receipt — the gateway's, the
        allocator's `RequestAck`, the start notice after an `Accept` — and the full timeout
        once the allocator holds the task and a proposal is awaited, which it makes at a tick."""
        if self.backoff is not None and self.prompt is not None:
            self.attempt += 1
            backoff = self.backoff if self.acknowledged and not self.accepted else self.prompt
            wait = backoff.reset() if fresh else backoff.next()
            self.wake_at(now + wait, RetryTask(self.current_task(), self.attempt))

    def _retry(self, task: int, attempt: int, now: float) -> None:
        if task != self.current_task() or attempt != self.attempt:
            return  # the task started, or progress restarted the chain
        if self.allocator < 0:
            self.send(self.gateway, ServerRequest(self.id))
        elif not self.accepted:
            self.send(self.allocator, self.task_request())
        else:
            self.send(self.proposer, Accept(self.id, task))
        self._arm(now, fresh=False)

    @handles(ServerReply)
    def on_server_reply(self, msg: ServerReply, now: float) -> None:
        """The gateway names where to send the current task. Decision (issue 52): a reply naming a
        server this user heard is down is ignored, and the retry chain asks again: the gateway
        answered before it learnt of the crash. Taken, such a reply sent the task to the crashed
        server until it came back, which then homed the user beside the home the gateway had
        moved it to — a second home whose stale share held every home's band below the user's
        true share, and BDGDRF stalled (`tests/test_stalls.py` replays the schedule that showed it)."""
        if self.backoff is not None and (self.allocator >= 0 or self.current_task() < 0):
            return  # an answer to a repeated question
        if msg.server in self.known_down:
            return
        self.allocator = msg.server
        self.send(msg.server, self.task_request())
        self._arm(now, fresh=True)
        if self.reprobe > 0:
            self.probes += 1
            self.wake_at(now + self.reprobe, Reprobe(self.current_task(), self.probes))

    def _handshake_timer(self, key: RetryTask | Reprobe, now: float) -> None:
        """The handshake's wake-ups, the same in both roles."""
        match key:
            case RetryTask(task=task, attempt=attempt):
                self._retry(task, attempt, now)
            case Reprobe(task=task, probe=probe):
                self._reprobe(task, probe, now)

    def _reprobe(self, task: int, probe: int, now: float) -> None:
        """No proposal came for the current task since it was last sent: send it to another server
        the gateway picks (the probe protocol's `--probe-retry`; its earlier copies stay where they are)."""
        if task == self.current_task() and probe == self.probes and not self.accepted:
            self._ask_gateway(now)

    @handles(RequestAck)
    def on_request_ack(self, msg: RequestAck, now: float) -> None:
        held = msg.task == self.current_task() and msg.sender == self.allocator
        if held and not self.acknowledged and not self.accepted:
            self.acknowledged = True
            self._arm(now, fresh=True)

    @handles(Proposal)
    def on_proposal(self, msg: Proposal, now: float) -> None:
        if msg.task == self.current_task() and not self.accepted:
            self.accepted = True
            self.proposer = msg.proposer
            self.send(msg.proposer, Accept(self.id, msg.task))
            self._arm(now, fresh=True)
        elif (self.backoff is not None and msg.task == self.current_task() and msg.proposer == self.proposer):
            self.send(msg.proposer, Accept(self.id, msg.task))  # our Accept was lost: the proposer asks again
        else:
            self.send(msg.proposer, Decline(self.id, msg.task))

    @handles(Forgotten)
    def on_forgotten(self, msg: Forgotten, now: float) -> None:
        if msg.task == self.current_task() and self.accepted and msg.sender == self.proposer:
            self.resubmit_current(now)

    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        peer = msg.peer
        self.known_down.add(peer)
        killed = [task for task, server in self.where.items() if server == peer]
        for task in killed:
            del self.where[task]
            self.task_killed(task, now)
        task = self.current_task()
        if task >= 0 and not self.durable_allocator and peer == (self.proposer if self.accepted else self.allocator):
            self.resubmit_current(now)
        elif killed and task >= 0 and self.allocator >= 0:
            self.send(self.allocator, UserShare(self.id, self.share_now(), True))

    @handles(PeerUp)
    def on_peer_up(self, msg: PeerUp, now: float) -> None:
        """A server that rejoins is found again through the gateway and the overlay."""
        self.known_down.discard(msg.peer)

    def task_killed(self, task: int, now: float) -> None:
        """Task `task`, running, died with its server: give it up and submit it again."""
        raise NotImplementedError

    def resubmit_current(self, now: float) -> None:
        """The server placing the current task crashed: send it again under a new id."""
        raise NotImplementedError

    def share_now(self) -> float:
        raise NotImplementedError

    def _note_where(self, task: int, server: int) -> None:
        if self.backoff is not None:
            self.where[task] = server


class UserNode(_HandshakeUser):
    __slots__ = ("demand", "task_share", "tasks", "share", "task", "begun")

    def __init__(self, actor_id: int, gateway: int, demand: Vector, total: Vector, rto: float = 0.0,
                 durable_allocator: bool = False, prompt: float = 0.0, reprobe: float = 0.0) -> None:
        super().__init__(actor_id, gateway, rto, durable_allocator, prompt, reprobe)
        self.demand = demand
        self.task_share = dominant_share(demand, total)
        self.tasks = 0
        self.share = 0.0
        self.task = 0
        self.begun = False

    def start(self, now: float) -> None:
        """Begin submitting: ask the gateway where the first task should go."""
        self.begun = True
        self._next(now)

    def _next(self, now: float) -> None:
        """Submit and send out the next task (its id is `task`)."""
        self.emit(TaskSubmitted(now, self.id, self.task, self.demand))
        self.emit(TaskDispatched(now, self.id, self.task))
        self._ask_gateway(now)

    def task_request(self) -> TaskRequest:
        return TaskRequest(self.id, self.task, self.demand, self.share)

    def on_timer(self, key: RetryTask | Reprobe, now: float) -> None:
        self._handshake_timer(key, now)

    def share_now(self) -> float:
        return self.share

    def task_killed(self, task: int, now: float) -> None:
        self.tasks -= 1
        self.share = self.tasks * self.task_share
        self.emit(TaskResubmitted(now, self.id, task, -1))

    def resubmit_current(self, now: float) -> None:
        old = self.task
        self.task += 1
        self.emit(TaskResubmitted(now, self.id, old, self.task))
        self._next(now)

    def counters(self) -> dict[str, int]:
        """The user's own account of its tasks (its current task is always out being placed)."""
        placing = int(self.begun)
        return {"submitted": self.task + placing, "waiting": 0, "placing": placing, "running": self.tasks,
                "finished": 0}

    def current_task(self) -> int:
        return self.task

    @handles(TaskStarted)
    def on_task_started(self, msg: TaskStarted, now: float) -> None:
        if msg.task != self.task:
            return  # a start for a task this user already counted: nothing to add
        self._note_where(msg.task, msg.server)
        self.tasks += 1
        self.share = self.tasks * self.task_share
        self.task += 1
        self._next(now)


class FiniteUserNode(_HandshakeUser):
    """A user with a finite list of tasks `(submit time, demand)`, in submission order."""

    __slots__ = ("total", "submits", "demands", "submitted", "queue", "current", "held", "running", "share",
                 "started", "ended", "idle_notice", "copies")

    def __init__(self, actor_id: int, gateway: int, tasks: Sequence[tuple[float, Vector]], total: Vector,
                 rto: float = 0.0, durable_allocator: bool = False, prompt: float = 0.0, reprobe: float = 0.0) -> None:
        super().__init__(actor_id, gateway, rto, durable_allocator, prompt, reprobe)
        self.total = total
        self.submits = [t for t, _ in tasks]
        self.demands = [d for _, d in tasks]
        self.submitted = 0  # workload tasks submitted so far (their ids are 0..n-1, in submission order)
        self.copies = 0  # tasks submitted again after a crash (ids n, n+1, …)
        self.queue: deque[int] = deque()  # submitted, not yet sent out
        self.current = -1  # the task out being placed, or -1
        self.held = [0.0] * len(total)
        self.running: dict[int, Vector] = {}
        self.share = 0.0
        self.started = 0
        self.ended = 0
        self.idle_notice: tuple[int, int, Backoff] | None = None  # (allocator, attempt, waits) until acknowledged

    def start(self, now: float) -> None:
        """Submit what is due now and ask to be woken for the rest."""
        self._submit_due(now)

    def on_timer(self, key: SubmitDue | RepeatIdle | RetryTask | Reprobe, now: float) -> None:
        match key:
            case SubmitDue():
                self._submit_due(now)
            case RepeatIdle(attempt=attempt):
                self._repeat_idle(attempt, now)
            case _:
                self._handshake_timer(key, now)

    def _repeat_idle(self, attempt: int, now: float) -> None:
        notice = self.idle_notice
        if notice is None or notice[1] != attempt:
            return  # acknowledged, or the next task went out
        self.send(notice[0], UserShare(self.id, self.share, False))
        self.wake_at(now + notice[2].next(), RepeatIdle(attempt))

    @handles(ShareAck)
    def on_share_ack(self, msg: ShareAck, now: float) -> None:
        if self.idle_notice is not None and self.idle_notice[0] == msg.sender:
            self.idle_notice = None

    def _submit_due(self, now: float) -> None:
        submits = self.submits
        while self.submitted < len(submits) and submits[self.submitted] <= now:
            task = self.submitted
            self.submitted += 1
            self.queue.append(task)
            self.emit(TaskSubmitted(now, self.id, task, self.demands[task]))
        if self.submitted < len(submits):
            self.wake_at(submits[self.submitted], SubmitDue())
        if self.current < 0 and self.queue:
            self._dispatch(now)

    def _dispatch(self, now: float) -> None:
        self.idle_notice = None
        self.current = self.queue.popleft()
        self.emit(TaskDispatched(now, self.id, self.current))
        self._ask_gateway(now)

    def task_request(self) -> TaskRequest:
        return TaskRequest(self.id, self.current, self.demands[self.current], self.share)

    def current_task(self) -> int:
        return self.current

    @handles(TaskStarted)
    def on_task_started(self, msg: TaskStarted, now: float) -> None:
        if msg.task != self.current:
            return
        demand = self.demands[msg.task]
        self._note_where(msg.task, msg.server)
        self.running[msg.task] = demand
        self.held = [h + d for h, d in zip(self.held, demand)]
        self.share = dominant_share(self.held, self.total)
        self.started += 1
        allocator = self.allocator
        self.current = -1
        if self.queue:
            self._dispatch(now)
        elif allocator >= 0:  # (none while a re-probe waits for the gateway: no allocator holds its request)
            self.send(allocator, UserShare(self.id, self.share, False))
            if self.prompt is not None:  # the allocator acknowledges it on receipt
                self.attempt += 1
                self.idle_notice = (allocator, self.attempt, Backoff(self.prompt.timeout))
                self.wake_at(now + self.prompt.timeout, RepeatIdle(self.attempt))

    @handles(TaskEnded)
    def on_task_ended(self, msg: TaskEnded, now: float) -> None:
        if self.backoff is not None:
            self.send(msg.server, EndAck(self.id, msg.task, self.id))
            if msg.task == self.current:  # its start notice was lost and it has already ended
                self.on_task_started(TaskStarted(msg.task, msg.server), now)
            if msg.task not in self.running:
                return  # a repeated notice
        demand = self.running.pop(msg.task)
        self.where.pop(msg.task, None)
        self.ended += 1
        if self.running:
            self.held = [h - d for h, d in zip(self.held, demand)]
        else:
            self.held = [0.0] * len(self.held)  # no rounding residue once nothing runs
        self.share = dominant_share(self.held, self.total)
        if self.current >= 0 and self.allocator >= 0:
            self.send(self.allocator, UserShare(self.id, self.share, True))

    def share_now(self) -> float:
        return self.share

    def _copy(self, task: int, now: float) -> None:
        """Submit task `task`'s demand again as a new task, behind the tasks waiting."""
        again = len(self.demands)
        self.demands.append(self.demands[task])
        self.emit(TaskResubmitted(now, self.id, task, again))
        self.emit(TaskSubmitted(now, self.id, again, self.demands[again]))
        self.copies += 1
        self.queue.append(again)

    def task_killed(self, task: int, now: float) -> None:
        demand = self.running.pop(task)
        if self.running:
            self.held = [h - d for h, d in zip(self.held, demand)]
        else:
            self.held = [0.0] * len(self.held)
        self.share = dominant_share(self.held, self.total)
        self._copy(task, now)
        if self.current < 0:
            self._dispatch(now)

    def resubmit_current(self, now: float) -> None:
        task = self.current
        self.current = -1
        self._copy(task, now)
        self._dispatch(now)

    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        if self.idle_notice is not None and self.idle_notice[0] == msg.peer:
            self.idle_notice = None  # the allocator it told is gone; its next task goes elsewhere
        super().on_peer_down(msg, now)

    def counters(self) -> dict[str, int]:
        """The user's own account of its tasks, for the run's ledger check."""
        placing = int(self.current >= 0)
        return {"submitted": self.submitted + self.copies, "waiting": len(self.queue), "placing": placing,
                "running": len(self.running), "finished": self.ended}
