"""Task lifetimes: the part of the emulated world that ends tasks (finite workloads).

A task's run time is a fact of the workload, not of any protocol. When a server reports a
start (`TaskAllocated`), this environment delivers `TaskExit` to that server `duration`
seconds later, as the server's own machine would report the process's exit: straight into its
mailbox (`RuntimePort.deliver_at`), not over the network. Everything after that — freeing the
room, telling the user and the scheduler — is the server's. A task submitted again after a
crash (`TaskResubmitted`) runs as long as the task it copies, from its own start: the work
done before the crash is lost with the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from drfemu.kernel.events import TaskAllocated, TaskResubmitted
from drfemu.kernel.messages import TaskExit
from drfemu.nodes.port import RuntimePort

__all__ = ["TaskLifetimes"]


class TaskLifetimes:
    """Ends every started task after its duration; `durations[user actor][task]` in seconds."""

    def __init__(self, runtime: RuntimePort, durations: Mapping[int, Sequence[float]]) -> None:
        self.runtime = runtime
        self.durations = {user: list(d) for user, d in durations.items()}
        runtime.subscribe(TaskAllocated, self.on_start)
        runtime.subscribe(TaskResubmitted, self.on_resubmitted)

    def on_start(self, event: TaskAllocated) -> None:
        self.runtime.deliver_at(event.time + self.durations[event.user][event.task], event.server,
                                TaskExit(event.user, event.task))

    def on_resubmitted(self, event: TaskResubmitted) -> None:
        if event.again >= 0:
            durations = self.durations[event.user]
            assert event.again == len(durations), "a finite user numbers its copies after its tasks"
            durations.append(durations[event.task])
