"""The resource node (server) role in the central protocols: it runs what it is told to.

It keeps its own free capacity and refuses to exceed it: a `Launch` that does not fit means
the allocator's view diverged from reality, a protocol bug, and raises `CapacityViolation`,
which aborts the run. A task it starts is reported as a `TaskAllocated` event.
"""

from __future__ import annotations

from nodes.actor import Actor
from protocols.events import TaskAllocated
from protocols.messages import Launch, TaskStarted, handles
from protocols.resources import CapacityViolation, Vector, fits, take

__all__ = ["ResourceNode"]


class ResourceNode(Actor):
    __slots__ = ("capacity", "free")

    def __init__(self, actor_id: int, capacity: Vector) -> None:
        super().__init__(actor_id)
        self.capacity = capacity
        self.free = list(capacity)

    def start_task(self, user: int, task: int, demand: Vector, now: float) -> None:
        """Run `task` of `user` here; report it and tell the user."""
        if not fits(demand, self.free, self.capacity):
            raise CapacityViolation(
                f"server {self.id}: task {task} of user {user} needs {demand} but only {tuple(self.free)} is free"
            )
        take(self.free, demand)
        self.emit(TaskAllocated(now, self.id, user, task, demand))
        self.send(user, TaskStarted(task, self.id))

    @handles(Launch)
    def on_launch(self, msg: Launch, now: float) -> None:
        self.start_task(msg.user, msg.task, msg.demand, now)
