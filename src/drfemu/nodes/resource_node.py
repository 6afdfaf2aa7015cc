"""The resource node (server) role in the central protocols: it runs what it is told to.

It keeps its own free capacity and refuses to exceed it: a `Launch` that does not fit means
the allocator's view diverged from reality, a protocol bug, and raises `CapacityViolation`,
which aborts the run. A task it starts is reported as a `TaskAllocated` event; a task that
ends (`TaskExit`, from its own machine) frees its demand, is reported as `TaskFinished`, and
is announced with `TaskEnded` to its user and to the scheduler, whose view must see the room.

With resilience on (`rto` > 0, a run with faults; `protocols.resilience`) a repeated `Launch`
repeats the start notice and never starts a task twice, and the end notice is repeated, with
back-off, until the user and the scheduler acknowledge it (`EndAck`). When the scheduler
rejoins after a crash (`PeerUp`), the node reports what runs on it (`ServerState`), again
until acknowledged (`StateAck`): the restarted scheduler rebuilds its view from these.

In the device model (`protocols.devices`) it holds each task on the devices the scheduler chose
(`Launch.devices`) and refuses devices that cannot hold it, like any other excess.
"""

from __future__ import annotations

from drfemu.kernel.events import TaskAllocated, TaskFinished
from drfemu.kernel.messages import (
    EndAck,
    Launch,
    PeerDown,
    PeerUp,
    ServerState,
    StateAck,
    TaskEnded,
    TaskExit,
    TaskStarted,
    handles,
)
from drfemu.kernel.resources import CapacityViolation, Vector, fits, give, take
from drfemu.nodes.actor import Actor
from drfemu.nodes.wakes import RepeatState, RepeatTaskEnd
from drfemu.protocols.devices import EMPTY, Devices
from drfemu.protocols.resilience import Notices

__all__ = ["ResourceNode"]



class ResourceNode(Actor):
    __slots__ = ("capacity", "free", "devices", "scheduler", "running", "held_devices", "rto", "ended", "unacked")

    def __init__(self, actor_id: int, capacity: Vector, scheduler: int = -1, rto: float = 0.0,
                 prompt: float = 0.0, device_resource: int = -1) -> None:
        """`rto` > 0 turns resilience on; end notices are repeated after `prompt` (0: `rto`), since
        users and the scheduler acknowledge them on receipt. `device_resource` ≥ 0: that resource
        is modelled as devices."""
        super().__init__(actor_id)
        self.capacity = capacity
        self.free = list(capacity)
        self.devices = Devices(device_resource, capacity[device_resource]) if device_resource >= 0 else None
        self.scheduler = scheduler
        self.running: dict[tuple[int, int], Vector] = {}
        self.held_devices: dict[tuple[int, int], tuple[int, ...]] = {}  # device model: each task's devices
        self.rto = rto
        self.ended: set[tuple[int, int]] = set()  # with resilience on: tasks that ran here and ended
        self.unacked = Notices(prompt or rto)  # end notices not yet acknowledged

    def start_task(self, user: int, task: int, demand: Vector, now: float, devices: tuple[int, ...] = EMPTY) -> None:
        """Run `task` of `user` here (on `devices`, in the device model); report it and tell the user."""
        if not fits(demand, self.free, self.capacity):
            raise CapacityViolation(
                f"server {self.id}: task {task} of user {user} needs {demand} but only {tuple(self.free)} is free"
            )
        if self.devices is not None:
            self.devices.take(demand[self.devices.resource], devices)
            self.held_devices[(user, task)] = devices
        take(self.free, demand)
        self.running[(user, task)] = demand
        self.emit(TaskAllocated(now, self.id, user, task, demand, devices))
        self.send(user, TaskStarted(task, self.id))

    @handles(Launch)
    def on_launch(self, msg: Launch, now: float) -> None:
        key = (msg.user, msg.task)
        if key in self.running:
            self.send(msg.user, TaskStarted(msg.task, self.id))  # the start notice was lost
        elif key not in self.ended:
            self.start_task(msg.user, msg.task, msg.demand, now, msg.devices)

    @handles(TaskExit)
    def on_task_exit(self, msg: TaskExit, now: float) -> None:
        demand = self.running.pop((msg.user, msg.task))
        give(self.free, demand)
        if self.devices is not None:
            self.devices.give(demand[self.devices.resource], self.held_devices.pop((msg.user, msg.task)))
        if not self.running:
            self.free = list(self.capacity)  # no rounding residue once nothing runs
            if self.devices is not None:
                self.devices.reset()
        self.emit(TaskFinished(now, self.id, msg.user, msg.task, demand))
        ended = TaskEnded(msg.user, msg.task, self.id)
        self.send(msg.user, ended)
        if self.scheduler >= 0:
            self.send(self.scheduler, ended)
        if self.rto > 0:
            self.ended.add((msg.user, msg.task))
            notice = RepeatTaskEnd(msg.user, msg.task)
            parties = {msg.user} | ({self.scheduler} if self.scheduler >= 0 else set())
            self.wake_at(now + self.unacked.add(notice, parties), notice)

    @handles(EndAck)
    def on_end_ack(self, msg: EndAck, now: float) -> None:
        self.unacked.ack(RepeatTaskEnd(msg.user, msg.task), msg.sender)

    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        """Nothing to do: notices to a crashed scheduler repeat until its next life answers."""

    @handles(PeerUp)
    def on_peer_up(self, msg: PeerUp, now: float) -> None:
        if msg.peer == self.scheduler:
            self._report()
            self.wake_at(now + self.unacked.add(RepeatState(), {self.scheduler}), RepeatState())

    @handles(StateAck)
    def on_state_ack(self, msg: StateAck, now: float) -> None:
        self.unacked.ack(RepeatState(), msg.sender)

    def _report(self) -> None:
        running = tuple((user, task, demand) for (user, task), demand in self.running.items())
        self.send(self.scheduler, ServerState(self.id, running))

    def on_timer(self, key: RepeatTaskEnd | RepeatState, now: float) -> None:
        """A notice is still unacknowledged: repeat it (the state report as it is now) to whoever
        has not answered."""
        due = self.unacked.due(key)
        if due is not None:
            match key:
                case RepeatState():
                    self._report()
                case RepeatTaskEnd(user=user, task=task):
                    for party in due[0]:
                        self.send(party, TaskEnded(user, task, self.id))
            self.wake_at(now + due[1], key)
