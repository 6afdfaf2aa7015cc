"""The replayable run log (issue 37): what `drfemu run --log` writes besides the allocations.

`--log` writes one JSON line per record, in the order things happened. With this module the
log holds, besides each allocation's line (`"event": "allocation"`, the fairness view), every
fact needed to re-check a run from outside, with no access to this code:

- `run`, first: the resources, every server's id and capacity, every user's id (and, in the
  device model, `devices`: the resource modelled as devices, `protocols.devices`);
- `submit`: a user submitted task `task` with `demand`;
- `start` / `end`: task `task` of `user` started / ended on `server`, holding `demand` (and, in
  the device model, a start names the `devices` it holds when it holds any);
- `resubmit`: a task whose server crashed (or whose proposer did) went back as task `again`;
- `crash` / `recover`: an actor went down / came back (`actor`: a server id, or "gateway",
  "scheduler", "user:<id>"); a crashed server's running tasks are killed with it;
- `fault`: an entry of the fault log (partitions, heals, loss and latency windows).

Every record has `time` (virtual seconds) and `event`. `tools.log_check` reads
only such a log and checks capacity at every instant, that no task runs twice at once, and
the ledger at the end. Decision: one log, not a second file, so the allocation lines and the
facts they depend on stay in one order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from drfemu.kernel.events import (
    ServerCrashed,
    ServerRecovered,
    TaskAllocated,
    TaskFinished,
    TaskResubmitted,
    TaskSubmitted,
)
from drfemu.nodes.port import Subscriber
from drfemu.schema.workload import Workload

__all__ = ["RunLog", "labelled_log"]

Emit = Callable[[dict[str, Any]], None]


class RunLog:
    """Writes a run's facts to `emit`, one record each, with the workload's labels."""

    def __init__(self, workload: Workload, emit: Emit, user_actors: Sequence[int], roles: dict[int, str],
                 devices: str | None = None) -> None:
        """`user_actors[k]` is user k's actor; `roles` names the actors that are not servers or users;
        `devices` the resource modelled as devices (None: none)."""
        self.emit = emit
        self.servers = [s.id for s in workload.servers]
        self.users = {actor: u.id for actor, u in zip(user_actors, workload.users)}
        self.roles = roles
        header: dict[str, Any] = {"event": "run", "time": 0.0, "resources": list(workload.resources),
                                  "servers": [{"id": s.id, "capacity": list(s.capacity)} for s in workload.servers],
                                  "users": [u.id for u in workload.users]}
        if devices is not None:
            header["devices"] = devices
        emit(header)

    def subscribe(self, runtime: Subscriber) -> None:
        """Hear the run's events (a runtime, or the live coordinator's bus)."""
        runtime.subscribe(TaskSubmitted, self.on_submitted)
        runtime.subscribe(TaskAllocated, self.on_started)
        runtime.subscribe(TaskFinished, self.on_ended)
        runtime.subscribe(TaskResubmitted, self.on_resubmitted)
        runtime.subscribe(ServerCrashed, self.on_crashed)
        runtime.subscribe(ServerRecovered, self.on_recovered)

    def _actor(self, actor: int) -> str:
        if actor < len(self.servers):
            return self.servers[actor]
        if actor in self.users:
            return f"user:{self.users[actor]}"
        return self.roles.get(actor, f"actor:{actor}")

    def on_submitted(self, event: TaskSubmitted) -> None:
        self.emit({"event": "submit", "time": event.time, "user": self.users[event.user], "task": event.task,
                   "demand": list(event.demand)})

    def on_started(self, event: TaskAllocated) -> None:
        record = {"event": "start", "time": event.time, "user": self.users[event.user], "task": event.task,
                  "server": self.servers[event.server], "demand": list(event.demand)}
        if event.devices:
            record["devices"] = list(event.devices)
        self.emit(record)

    def on_ended(self, event: TaskFinished) -> None:
        self.emit({"event": "end", "time": event.time, "user": self.users[event.user], "task": event.task,
                   "server": self.servers[event.server], "demand": list(event.demand)})

    def on_resubmitted(self, event: TaskResubmitted) -> None:
        self.emit({"event": "resubmit", "time": event.time, "user": self.users[event.user], "task": event.task,
                   "again": event.again})

    def on_crashed(self, event: ServerCrashed) -> None:
        self.emit({"event": "crash", "time": event.time, "actor": self._actor(event.actor)})

    def on_recovered(self, event: ServerRecovered) -> None:
        self.emit({"event": "recover", "time": event.time, "actor": self._actor(event.actor)})

    def on_fault(self, entry: dict[str, Any]) -> None:
        """An entry of the fault injector's log, as it is written."""
        detail = {k: v for k, v in entry.items() if k not in ("at", "event")}
        for key in ("actors", "servers", "already_on_an_island"):
            if key in detail:
                detail[key] = [self._actor(a) for a in detail[key]]
        if "links" in detail:
            detail["links"] = [[self._actor(a), self._actor(b)] for a, b in detail["links"]]
        self.emit({"event": "fault", "time": entry["at"], "fault_event": entry["event"], **detail})


def labelled_log(workload: Workload, emit: Emit) -> Callable[..., None]:
    """An allocation log for a harness that hands `emit` one record per allocation, with the
    workload's user and server labels in place of actor numbers."""
    servers = [s.id for s in workload.servers]
    users = [u.id for u in workload.users]

    def log(event: str, **fields: Any) -> None:
        fields["user"] = users[fields["user"]]
        fields["server"] = servers[fields["server"]]
        emit({"event": event, **fields})

    return log
