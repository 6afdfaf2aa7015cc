"""The fault injector (issue 16): plays a bound fault scenario into a run.

It is part of the run's environment, like the task lifetimes: it changes the network
(`nodes.network.Network`'s loss, latency, islands) at the times the scenario gives, through
timers on the runtime, and keeps a log of what it did (`log`, the result's `faults`). Counts
("crash 10 servers") are drawn from the run's own `faults` stream, among the servers the
action can apply to, in id order, so the same seed names the same servers. An event with a
`duration` is undone that long after it started: an island rejoins, a crashed node recovers,
and a loss or latency window closes. Windows on one setting compose by one rule
(`assembly.windows`): the latest-started window still open is in force, else the
setting's base.

Crashes (issue 16). A crash takes an actor down (`Runtime.crash`: its volatile state, its
running tasks, everything on its way to it are gone) and is published (`ServerCrashed`) for
the run's observers. The environment's failure detector tells every live actor
`detection` seconds later (`PeerDown`, straight into its mailbox like a task's exit — a
membership service outside the protocols, as a Mesos master or a ZooKeeper session
timeout would be; decision: `detection` is three retransmission timeouts, the time three
missed heartbeats at that period would take). A recovery builds the actor afresh
(`restart(actor, life)`, given by the run: a server rejoins empty, a scheduler rebuilds from
reports), publishes `ServerRecovered` and tells every live actor at once (`PeerUp`); a
crash not yet detected when the node rejoins is detected then (its restart reveals it). A
crash of an actor already down, or a recovery of one that is up, does nothing (logged).
Targets: `scheduler` and `gateway` are those actors; `centre` is the server the run's
`centre()` names when the event fires (the gradient's centre: the home of the user with the
lowest share that still has a task to place).

Partitions (issue 37): servers still cut off on their island when the failure detector's delay
has passed are *fenced* — taken down as a crash would take them, their running tasks with them,
and reported down to every live actor at once — and recover, empty, when their island heals
(an explicit `heal`, or the event's `duration`). Decision: a partition seen through a
membership service with leases, as Mesos, Kubernetes or a ZooKeeper session sees one — the
mainland declares the unreachable servers gone and places their work again, and a server
that lost its lease stops its tasks — so a task launched onto a server that became unreachable
is placed again and nothing runs twice. Before, a central scheduler repeated its launch onto
the island for ever while that task's user waited. A partition shorter than the delay only
drops messages, which the handshake repeats.

Churn: `churn.count(servers)` servers, drawn once from the `faults` stream, each alternate up
and down on its own stream (`faults/churn/<position>`): up for a draw of `up`, down for a
draw of `down`, from `start`; no crash begins after `end`.

`settled()` says whether a crash or recovery may still change the cluster (one is still
planned): the harness holds saturation until it is, and counts no wait as a stall while it is
not. An actor that is down with nothing planned is down for good (issue 37): saturation is
then judged over the servers that are up, a stall counts, and `standing()` names what is down
for good and the event that took it down, for the end reason. `pending()` says what is still
planned, for a run that reaches its time cap with faults to come (churn without an end).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from functools import partial
from typing import Any, Protocol

from drfemu.assembly.windows import Windows
from drfemu.kernel.latency import parse_latency
from drfemu.kernel.messages import MESSAGE_TYPES, PeerDown, PeerUp
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.network import Network
from drfemu.schema.faults import Action, BoundScenario, FaultEvent, Selection, Target

__all__ = ["DETECTION_TIMEOUTS", "FaultInjector", "FaultPort"]

DETECTION_TIMEOUTS = 3  # the failure detector's delay, in retransmission timeouts
MEMBERSHIP = (Action.CRASH, Action.RECOVER, Action.PARTITION, Action.HEAL)  # may take servers down or bring them back


class FaultPort(Protocol):
    """What the fault injector may do to a run, and all it may know of it: the run implements it."""

    network: Network
    servers: list[int]  # the server actors, in order

    @property
    def targets(self) -> Mapping[Target, int]:
        """The actors `target = "gateway"` and `target = "scheduler"` name."""

    @property
    def down(self) -> AbstractSet[int]:
        """The actors that are down now."""

    def call_at(self, at: float, callback: Callable[[float], None]) -> None:
        """Run `callback(now)` at virtual time `at`."""

    def take_down(self, actor: int, now: float) -> None:
        """Crash `actor`: it receives, sends and fires nothing more; the observers hear `ServerCrashed`."""

    def bring_back(self, actor: int, life: int, now: float) -> None:
        """Start `actor`'s `life`-th life, empty; the observers hear `ServerRecovered` and every live
        actor `PeerUp`, before the new life says anything."""

    def notify(self, notice: PeerDown | PeerUp) -> None:
        """Deliver the failure detector's `notice` to every live actor but its peer, now."""

    def centre(self) -> int:
        """The gradient's centre now (the server a `target = "centre"` event names)."""


class FaultInjector:
    """Schedules every event of a bound scenario through `port`."""

    def __init__(self, bound: BoundScenario, port: FaultPort, streams: RandomStreams, *, detection: float = 0.0,
                 max_time: float = float("inf"), listener: Callable[[dict[str, Any]], None] | None = None) -> None:
        """`detection`: the failure detector's delay; `listener` hears each entry of the fault log
        as it is made (the run log)."""
        scenario = bound.scenario
        self.scenario = scenario
        self.port = port
        self.network = port.network
        self.positions = bound.positions
        self.servers = port.servers
        self.streams = streams
        self.rng = streams.python("faults")
        self.detection = detection
        self.targets = dict(port.targets)
        self.islands = 0
        self.log: list[dict[str, Any]] = []
        self.listener = listener
        self.lives: dict[int, int] = {}  # actor -> restarts so far
        self.cause: dict[int, str] = {}  # actor -> what took it down last ("event 2", "churn")
        self.undetected: set[int] = set()  # crashed, the failure detector has not told yet
        self.planned = 0  # crashes and recoveries scheduled, not yet due
        self.last_change = 0.0  # the latest crash or recovery
        self._windows: dict[tuple[Any, ...], Windows[Any]] = {}  # the loss and latency windows, by setting
        self.network.set_loss(scenario.loss)
        for name, p in scenario.loss_by_type.items():
            self.network.set_loss(p, message_type=MESSAGE_TYPES[name])
        self.fenced: set[int] = set()  # servers their island fenced (down until it heals)
        self.island_event: dict[int, int] = {}  # island -> the number of the partition event that made it
        for event in scenario.events:
            self._plan(event.at, partial(self._apply, event), event.action in MEMBERSHIP)
        if scenario.churn is not None:
            self._start_churn(max_time)

    # -- the state observers read ---------------------------------------------------------
    def settled(self) -> bool:
        """No crash or recovery is planned: what is down now is down for good."""
        return not self.planned

    def standing(self) -> str:
        """What is down for good, with the events that took it down ("" when nothing is)."""
        if self.planned or not self.port.down:
            return ""
        names = {actor: role.value for role, actor in self.targets.items()}
        by_cause: dict[str, list[str]] = {}
        for actor in sorted(self.port.down):
            by_cause.setdefault(self.cause.get(actor, "a fault"), []).append(names.get(actor, f"server {actor}"))
        return "; ".join(f"{', '.join(down)} down for good since {cause}" for cause, down in by_cause.items())

    def pending(self) -> str:
        """The crashes and recoveries still planned, described ("" when none is)."""
        if not self.planned:
            return ""
        churn = self.scenario.churn
        endless = " ([churn] has no end)" if churn is not None and churn.end is None else ""
        return f"{self.planned} crash(es) or recoveries still planned{endless}"

    def _plan(self, at: float, action: Callable[[float], None], changes_membership: bool) -> None:
        if changes_membership:
            self.planned += 1

            def due(now: float) -> None:
                self.planned -= 1
                action(now)

            self.port.call_at(at, due)
        else:
            self.port.call_at(at, action)

    def _select(self, selection: Selection, candidates: list[int]) -> list[int]:
        if selection.crashed:
            return [c for c in candidates if c in self.port.down]
        if selection.every:
            return list(candidates)
        if selection.count is not None:
            return sorted(self.rng.sample(candidates, min(selection.count, len(candidates))))
        return sorted({self.positions[sid] for sid in selection.ids})

    def _later(self, event: FaultEvent, now: float, undo: Any, changes_membership: bool = False) -> None:
        if event.duration is not None:
            self._plan(now + event.duration, undo, changes_membership)

    def _record(self, now: float, event: FaultEvent, **detail: Any) -> None:
        self._note({"at": now, "event": event.number, "action": event.action.value, **detail})

    def _note(self, entry: dict[str, Any]) -> None:
        self.log.append(entry)
        if self.listener is not None:
            self.listener(entry)

    def _apply(self, event: FaultEvent, now: float) -> None:
        action = event.action
        if action is Action.LOSS:
            self._loss(event, now)
        elif action is Action.LATENCY:
            windows = self._setting(("latency",), None)  # base None: the run's own latency model
            self.network.set_latency(windows.open(event.number, parse_latency(event.latency or "", self.rng)))
            self._record(now, event, latency=self.network.latency.describe())
            self._later(event, now, lambda t: self._undo(event, t, lambda: self.network.set_latency(
                windows.close(event.number))))
        elif action is Action.PARTITION:
            assert event.servers is not None
            isolated = self.network.isolated()
            named = self._select(event.servers, [s for s in self.servers if s not in isolated])
            chosen = [s for s in named if s not in isolated]  # a partition never moves a server between islands
            self.islands += 1
            self.network.isolate(chosen, self.islands)
            kept = [s for s in named if s in isolated]
            self._record(now, event, servers=chosen, **({"already_on_an_island": kept} if kept else {}))
            self.island_event[self.islands] = event.number
            self._fence_later(chosen, self.islands, now)
            self._later(event, now, lambda t: self._undo(event, t, lambda: self._heal(chosen, t)),
                        changes_membership=True)
        elif action is Action.HEAL:
            back = self._heal(sorted(self.network.isolated()), now)
            self._record(now, event, **({"recovered": back} if back else {}))
        elif action is Action.CRASH:
            chosen = self._actors(event, now)
            crashed = [a for a in chosen if self.crash(a, now, f"event {event.number}")]
            self._record(now, event, actors=crashed)
            self._later(event, now, lambda t: self._undo(event, t, lambda: [self.recover(a, t) for a in crashed]),
                        changes_membership=True)
        else:  # recover
            chosen = self._actors(event, now)
            self._record(now, event, actors=[a for a in chosen if self.recover(a, now)])

    def _actors(self, event: FaultEvent, now: float) -> list[int]:
        """The actors a crash or recovery names, now."""
        if event.target is Target.CENTRE:
            return [self.port.centre()]
        if event.target is not None:
            return [self.targets[event.target]]
        assert event.servers is not None
        if event.action is Action.CRASH:
            return self._select(event.servers, [s for s in self.servers if s not in self.port.down])
        return self._select(event.servers, self.servers)

    # -- partitions: fencing --------------------------------------------------------------
    def _fence_later(self, servers: list[int], island: int, now: float) -> None:
        """Fence `servers` after the failure detector's delay if they are still on `island`."""
        if servers:
            self._plan(now + self.detection, partial(self._fence, servers, island), True)

    def _fence(self, servers: list[int], island: int, now: float) -> None:
        event = self.island_event[island]
        fenced = [s for s in servers
                  if self.network.island_of(s) == island
                  and self.crash(s, now, f"event {event} (cut off by a partition)", detected=True)]
        self.fenced.update(fenced)
        if fenced:
            self._note({"at": now, "event": event, "action": "fence", "servers": fenced})

    def _heal(self, servers: list[int], now: float) -> list[int]:
        """`servers` rejoin the mainland; those their island fenced recover. Returns those."""
        self.network.heal(servers)
        return [s for s in servers if s in self.fenced and self.recover(s, now)]  # `recover` unfences

    # -- crashes and recoveries -----------------------------------------------------------
    def crash(self, actor: int, now: float, cause: str, detected: bool = False) -> bool:
        """Take `actor` down now (`cause`: the event that does, for the end reason); False if it
        already is. `detected`: the failure detector tells the others now (a fenced server),
        not after its delay."""
        if actor in self.port.down:
            return False
        self.cause[actor] = cause
        self.last_change = now
        self.port.take_down(actor, now)
        if detected:
            self.port.notify(PeerDown(actor))
            return True
        self.undetected.add(actor)
        life = self.lives.get(actor, 0)
        self.port.call_at(now + self.detection, lambda t: self._detect(actor, life))
        return True

    def _detect(self, actor: int, life: int) -> None:
        if actor in self.undetected and self.lives.get(actor, 0) == life:
            self.undetected.discard(actor)
            self.port.notify(PeerDown(actor))

    def recover(self, actor: int, now: float) -> bool:
        """Bring `actor` back, in a new life; False if it is up."""
        if actor not in self.port.down:
            return False
        if actor in self.undetected:
            self.undetected.discard(actor)
            self.port.notify(PeerDown(actor))
        life = self.lives[actor] = self.lives.get(actor, 0) + 1
        self.last_change = now
        self.port.bring_back(actor, life, now)
        self.fenced.discard(actor)
        island = self.network.island_of(actor)
        if island:  # back on an island it is still cut off on: fenced again, as before
            self._fence_later([actor], island, now)
        return True

    # -- churn ----------------------------------------------------------------------------
    def _start_churn(self, max_time: float) -> None:
        churn = self.scenario.churn
        assert churn is not None
        end = min(churn.end if churn.end is not None else max_time, max_time)
        chosen = sorted(self.rng.sample(self.servers, min(churn.count(len(self.servers)), len(self.servers))))
        up, down = churn.up_draw, churn.down_draw
        for server in chosen:
            rng = self.streams.numpy(f"faults/churn/{server}")
            self._plan(churn.start + float(up(rng, 1)[0]), partial(self._churn_crash, server, rng, up, down, end), True)

    def _churn_crash(self, server: int, rng: Any, up: Any, down: Any, end: float, now: float) -> None:
        if now > end:
            return
        if self.crash(server, now, "churn"):
            self._note({"at": now, "event": "churn", "action": "crash", "actors": [server]})
        self._plan(now + float(down(rng, 1)[0]), partial(self._churn_recover, server, rng, up, down, end), True)

    def _churn_recover(self, server: int, rng: Any, up: Any, down: Any, end: float, now: float) -> None:
        if self.recover(server, now):
            self._note({"at": now, "event": "churn", "action": "recover", "actors": [server]})
        later = now + float(up(rng, 1)[0])
        if later <= end:
            self._plan(later, partial(self._churn_crash, server, rng, up, down, end), True)

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
        opened = []
        for name in names:
            key = ("loss", name.get("message_type"), name.get("link"))
            windows = self._windows.get(key)
            base = network.set_loss(event.loss, **name)
            if windows is None:  # the first window on this setting: what it replaced is the base
                windows = self._setting(key, base)
            windows.open(event.number, event.loss)
            opened.append((name, windows))
        self._record(now, event, loss=event.loss, **detail)
        self._later(event, now, lambda t: self._undo(event, t, lambda: [
            network.set_loss(windows.close(event.number), **name) for name, windows in opened]))

    def _setting(self, key: tuple[Any, ...], base: Any) -> Windows[Any]:
        """The windows of one setting (made with `base` the first time)."""
        if key not in self._windows:
            self._windows[key] = Windows(base)
        return self._windows[key]

    def _undo(self, event: FaultEvent, now: float, undo: Any) -> None:
        undo()
        self._note({"at": now, "event": event.number, "action": f"end of {event.action.value}"})
