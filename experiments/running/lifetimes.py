"""Task lifetimes: the part of the emulated world that ends tasks (finite workloads).

A task's run time is a fact of the workload, not of any protocol. When a server reports a
start (`TaskAllocated`), this environment delivers `TaskExit` to that server `duration`
seconds later, as the server's own machine would report the process's exit: straight into its
mailbox (`Runtime.deliver_at`), not over the network. Everything after that — freeing the
room, telling the user and the scheduler — is the server's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodes.runtime import Runtime
from protocols.events import TaskAllocated
from protocols.messages import TaskExit

__all__ = ["TaskLifetimes"]


class TaskLifetimes:
    """Ends every started task after its duration; `durations[user actor][task]` in seconds."""

    def __init__(self, runtime: Runtime, durations: Mapping[int, Sequence[float]]) -> None:
        self.runtime = runtime
        self.durations = durations
        runtime.subscribe(TaskAllocated, self.on_start)

    def on_start(self, event: TaskAllocated) -> None:
        self.runtime.deliver_at(event.time + self.durations[event.user][event.task], event.server,
                                TaskExit(event.user, event.task))
