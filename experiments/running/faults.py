"""The fault injector (issue 16): plays a bound fault scenario into a run.

It is part of the run's environment, like the task lifetimes: it changes the network
(`nodes.network.Network`'s loss, latency, islands) at the times the scenario gives, through
timers on the runtime, and keeps a log of what it did (`log`, the result's `faults`). Counts
("crash 10 servers") are drawn from the run's own `faults` stream, among the servers the
action can apply to, in id order, so the same seed names the same servers. An event with a
`duration` is undone that long after it started: a loss or latency goes back to what was in
force when the event began, an island rejoins.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import partial
from typing import Any

from experiments.workloads.faults import Action, FaultEvent, FaultScenario, Selection
from nodes.network import Network, parse_latency
from nodes.runtime import Runtime
from protocols.messages import MESSAGE_TYPES

__all__ = ["FaultInjector"]


class FaultInjector:
    """Schedules every event of `scenario` on `runtime`; `positions` maps the server ids the
    scenario names to their actors (`FaultScenario.bind`), `servers` lists the server actors."""

    def __init__(self, scenario: FaultScenario, positions: Mapping[Any, int], runtime: Runtime, network: Network,
                 servers: list[int], rng: random.Random) -> None:
        self.scenario = scenario
        self.runtime = runtime
        self.network = network
        self.positions = positions
        self.servers = servers
        self.rng = rng
        self.islands = 0
        self.log: list[dict[str, Any]] = []
        network.set_loss(scenario.loss)
        for name, p in scenario.loss_by_type.items():
            network.set_loss(p, message_type=MESSAGE_TYPES[name])
        for event in scenario.events:
            runtime.call_at(event.at, partial(self._apply, event))

    def _select(self, selection: Selection, candidates: list[int]) -> list[int]:
        if selection.every:
            return list(candidates)
        if selection.count is not None:
            return sorted(self.rng.sample(candidates, min(selection.count, len(candidates))))
        return sorted({self.positions[sid] for sid in selection.ids})

    def _later(self, event: FaultEvent, now: float, undo: Any) -> None:
        if event.duration is not None:
            self.runtime.call_at(now + event.duration, undo)

    def _record(self, now: float, event: FaultEvent, **detail: Any) -> None:
        self.log.append({"at": now, "event": event.number, "action": event.action.value, **detail})

    def _apply(self, event: FaultEvent, now: float) -> None:
        action = event.action
        if action is Action.LOSS:
            self._loss(event, now)
        elif action is Action.LATENCY:
            before = self.network.set_latency(parse_latency(event.latency or "", self.rng))
            self._record(now, event, latency=self.network.latency.describe())
            self._later(event, now, lambda t: self._undo(event, t, lambda: self.network.set_latency(before)))
        elif action is Action.PARTITION:
            assert event.servers is not None
            isolated = self.network.isolated()
            chosen = self._select(event.servers, [s for s in self.servers if s not in isolated])
            self.islands += 1
            self.network.isolate(chosen, self.islands)
            self._record(now, event, servers=chosen)
            self._later(event, now, lambda t: self._undo(event, t, lambda: self.network.heal(chosen)))
        elif action is Action.HEAL:
            self.network.heal()
            self._record(now, event)
        else:
            raise NotImplementedError(f"fault action {action.value!r}")  # refused by `FaultScenario.bind`

    def _loss(self, event: FaultEvent, now: float) -> None:
        """Set the event's loss on what it names — links, message types or every message — and
        put back, at its end, what each had before."""
        network = self.network
        if event.links:
            links = [(self.positions[a], self.positions[b]) for a, b in event.links]
            names: list[dict[str, Any]] = [{"link": link} for link in links]
            detail: dict[str, Any] = {"links": [list(link) for link in links]}
        elif event.messages:
            names = [{"message_type": MESSAGE_TYPES[name]} for name in event.messages]
            detail = {"messages": list(event.messages)}
        else:
            names, detail = [{}], {}
        before = [network.set_loss(event.loss, **name) for name in names]
        self._record(now, event, loss=event.loss, **detail)
        self._later(event, now, lambda t: self._undo(event, t, lambda: [
            network.set_loss(b, **name) for name, b in zip(names, before)]))

    def _undo(self, event: FaultEvent, now: float, undo: Any) -> None:
        undo()
        self.log.append({"at": now, "event": event.number, "action": f"end of {event.action.value}"})
