"""Fault scenarios (issue 16): what goes wrong during a run, and when — a TOML file.

```toml
loss = 0.01                     # every message, the whole run (0 ≤ loss < 1)
[loss_by_type]                  # optional: per message type, the whole run
Proposal = 0.05

[churn]                         # optional: servers that crash and recover on their own
servers = 10                    # a count, or a fraction below 1 (0.1: a tenth), drawn once
up = "exp:300"                  # time up before each crash (a duration spec, seconds)
down = "weibull:60:1.5"         # time down before each recovery
start = "0s"                    # first crash draws count from here (default 0)
end = "600s"                    # no crash begins after this (default: the time cap); every
                                # server down then still recovers after its drawn down time

[[event]]                       # any number, in any order
at = "60s"
action = "crash"                # crash | recover | loss | latency | partition | heal
servers = 10                    # a count (drawn), a list of server ids, "crashed" or "all"
duration = "30s"                # optional: undo it after this long (crash → recover, …)
```

Per action:
- `crash`: `servers`, or `target = "scheduler"` (central protocols), `"centre"` (the server at
  the gradient's centre then; gradient protocols) or `"gateway"`;
- `recover`: `servers` (`"crashed"`: every server down at that time) or `target`;
- `loss`: `loss = p`, optionally `messages = ["Proposal", …]` (types) or
  `links = [[a, b], …]` (directed server pairs); replaces the loss the scenario's top level gives
  those messages until `duration` ends;
- `latency`: `latency = "uniform:1ms:20ms"` (the `--latency` forms) until `duration` ends;
- `partition`: `servers` are cut off from every other actor (each partition event makes one
  island) until `duration` ends or a `heal`;
- `heal`: every island rejoins.

Times are durations with a unit (`"60s"`, `"500ms"`) or bare seconds. Server ids are the
workload's (`"m603122"`) or positions (0-based integers). `load_scenario` checks the file
alone; `FaultScenario.bind` checks it against a run (ids exist, counts fit, the target exists
for the protocol, every time before the time cap). Every problem is one line naming the file,
the event and the problem, before anything runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_toml
from drfemu.kernel.latency import parse_duration, parse_latency
from drfemu.kernel.messages import MESSAGE_TYPES, never_on_the_wire
from drfemu.kernel.processes import Draw, duration_distribution
from drfemu.protocols.registry import PROTOCOLS

__all__ = ["Action", "BoundScenario", "Churn", "FaultEvent", "FaultScenario", "ScenarioError", "Selection", "Target",
           "load_scenario", "parse_scenario"]


class ScenarioError(InputError):
    """A fault scenario that cannot run; the message names the file, the entry and the problem."""


class Action(StrEnum):
    CRASH = "crash"
    RECOVER = "recover"
    LOSS = "loss"
    LATENCY = "latency"
    PARTITION = "partition"
    HEAL = "heal"


class Target(StrEnum):
    SCHEDULER = "scheduler"
    CENTRE = "centre"
    GATEWAY = "gateway"


@dataclass(frozen=True)
class Selection:
    """Which servers an event names: `count` drawn at the time, `ids`, every crashed one or all."""

    count: int | None = None
    ids: tuple[str | int, ...] = ()
    crashed: bool = False
    every: bool = False


@dataclass(frozen=True)
class FaultEvent:
    number: int  # 1-based, as the file lists it
    at: float
    action: Action
    servers: Selection | None = None
    target: Target | None = None
    duration: float | None = None
    loss: float | None = None
    messages: tuple[str, ...] = ()
    links: tuple[tuple[str | int, str | int], ...] = ()
    latency: str | None = None


@dataclass(frozen=True)
class Churn:
    """Servers that crash and recover on their own: `up` and `down` are duration specs, whose
    draws (`up_draw`, `down_draw`: `kernel.processes`) are parsed with the scenario."""

    servers: float  # a count (≥ 1) or a fraction (< 1)
    up: str
    down: str
    start: float = 0.0
    end: float | None = None  # None: the time cap
    up_draw: Draw = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    down_draw: Draw = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def count(self, servers: int) -> int:
        """How many of `servers` servers churn (a fraction rounds to the nearest, at least 1)."""
        return int(self.servers) if self.servers >= 1 else max(1, round(self.servers * servers))


@dataclass(frozen=True)
class FaultScenario:
    source: str
    loss: float = 0.0
    loss_by_type: Mapping[str, float] = field(default_factory=dict)
    events: tuple[FaultEvent, ...] = ()
    churn: Churn | None = None

    @property
    def crashes(self) -> bool:
        """Can a server go down in this scenario: a crash event, churn, or a partition (a server cut
        off past the failure detector's delay is fenced, `assembly.faults`)?"""
        return self.churn is not None or any(e.action in (Action.CRASH, Action.PARTITION) for e in self.events)

    def fail(self, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {message}")

    def bind(self, server_ids: Sequence[str], central: bool, gradient: bool, max_time: float,
             round_trip_within: float | None = None) -> dict[str | int, int]:
        """Check the scenario against a run; returns every server id it names → its position.
        `round_trip_within`: the run's protocol needs its round trips within this many seconds
        (DGDRF: one tick), so a latency event whose every round trip is longer is refused."""
        positions: dict[str | int, int] = {sid: k for k, sid in enumerate(server_ids)}
        named: dict[str | int, int] = {}

        def server(event: FaultEvent, sid: str | int) -> None:
            if isinstance(sid, int):
                if not 0 <= sid < len(server_ids):
                    raise self.fail(f"event {event.number}: server {sid} is not a position 0..{len(server_ids) - 1}")
                named[sid] = sid
            elif sid in positions:
                named[sid] = positions[sid]
            else:
                raise self.fail(f"event {event.number}: server {sid!r} is not in the workload")

        unknown = _unknown_types(self.loss_by_type)
        if unknown:
            raise self.fail(f"loss_by_type: unknown message type(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(MESSAGE_TYPES))})")
        _refuse_local(sorted(set(self.loss_by_type) & never_on_the_wire()), "loss_by_type", self.fail)
        for event in self.events:
            if event.at >= max_time:
                raise self.fail(f"event {event.number}: at {event.at:g} s is not before the run's time cap "
                                f"({max_time:g} s)")
            unknown = _unknown_types(event.messages)
            if unknown:
                raise self.fail(f"event {event.number}: unknown message type(s) {', '.join(unknown)}")
            _refuse_local(sorted(set(event.messages) & never_on_the_wire()), f"event {event.number}", self.fail)
            selection = event.servers
            if selection is not None:
                if selection.count is not None and selection.count > len(server_ids):
                    raise self.fail(f"event {event.number}: {selection.count} servers named, the run has "
                                    f"{len(server_ids)}")
                for sid in selection.ids:
                    server(event, sid)
            for a, b in event.links:
                server(event, a)
                server(event, b)
                if named[a] == named[b]:
                    raise self.fail(f"event {event.number}: links: [{a!r}, {b!r}] names one server twice, a link "
                                    "to itself, which sends nothing over the network")
            if event.latency is not None and round_trip_within is not None:
                shortest = 2 * parse_latency(event.latency, random.Random(0)).floor_us() / 1e6
                if shortest > round_trip_within:
                    raise self.fail(f"event {event.number}: latency {event.latency!r} makes every round trip at "
                                    f"least {shortest * 1e3:g} ms, longer than the {round_trip_within * 1e3:g} ms "
                                    "tick within which this protocol's centre check must be answered (it would "
                                    "never allocate again; docs/faults.md)")
            if event.target is Target.SCHEDULER and not central:
                raise self.fail(f"event {event.number}: target 'scheduler' needs a central protocol")
            if event.target is Target.CENTRE and not gradient:
                raise self.fail(f"event {event.number}: target 'centre' needs a gradient protocol")
        self._refuse_moving_islands(named)
        if self.churn is not None and self.churn.servers >= 1 and self.churn.servers > len(server_ids):
            raise self.fail(f"churn: {self.churn.servers:g} servers named, the run has {len(server_ids)}")
        if self.churn is not None and self.churn.start >= max_time:
            raise self.fail(f"churn: start {self.churn.start:g} s is not before the run's time cap ({max_time:g} s)")
        return named


    def _refuse_moving_islands(self, named: Mapping[str | int, int]) -> None:
        """A partition that names a server already on an island (made by an earlier partition
        naming it, whose island has not healed) would move it, which a partition never does:
        refused, naming both events. Islands of counted partitions are drawn in the run, among
        the servers on no island, so they cannot clash this way."""
        islands: dict[int, tuple[int, float]] = {}  # server -> (event, when its island heals)
        for event in self.events:
            if event.action is Action.HEAL:
                islands = {s: (n, min(end, event.at)) for s, (n, end) in islands.items()}
            if event.action is not Action.PARTITION or event.servers is None or not event.servers.ids:
                continue
            end = event.at + event.duration if event.duration is not None else float("inf")
            for sid in event.servers.ids:
                server = named[sid]
                if server in islands and islands[server][1] > event.at:
                    raise self.fail(f"event {event.number}: server {sid!r} is still on the island of event "
                                    f"{islands[server][0]}, and a partition never moves a server between islands")
                islands[server] = (event.number, end)


def _unknown_types(names: Iterable[str]) -> list[str]:
    """The names that no message class has, once every protocol is loaded (their messages
    register on import, and which have been imported must not decide what a scenario may name)."""
    unknown = sorted(set(names) - set(MESSAGE_TYPES))
    if unknown:
        PROTOCOLS.load_all()
        unknown = sorted(set(names) - set(MESSAGE_TYPES))
    return unknown


def _refuse_local(names: Sequence[str], where: str, fail: Callable[[str], ScenarioError]) -> None:
    if names:
        raise fail(f"{where}: loss on {', '.join(names)} would do nothing: "
                   f"{'they are' if len(names) > 1 else 'it is'} delivered into a mailbox, never sent over the network")


_TOP = {"loss", "loss_by_type", "churn", "event"}
_EVENT = {"at", "action", "servers", "target", "duration", "loss", "messages", "links", "latency"}
_NEEDS: dict[Action, tuple[str, ...]] = {Action.LOSS: ("loss",), Action.LATENCY: ("latency",)}
_ALLOWS: dict[Action, set[str]] = {
    Action.CRASH: {"servers", "target", "duration"},
    Action.RECOVER: {"servers", "target"},
    Action.LOSS: {"loss", "messages", "links", "duration"},
    Action.LATENCY: {"latency", "duration"},
    Action.PARTITION: {"servers", "duration"},
    Action.HEAL: set(),
}


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{where} must be a duration such as '60s', not {value!r}")
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except ValueError as error:
        raise InputError(f"{where}: {error}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise InputError(f"{where} must be a time from 0 on (the run starts at 0 s), not {value!r}")
    return seconds


def _probability(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise InputError(f"{where} must be a probability in [0, 1), not {value!r}")
    return float(value)


def _server_id(value: Any, where: str) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: a server is a workload id (text) or a position (integer), not {value!r}")
    return value


def _selection(value: Any, where: str) -> Selection:
    if isinstance(value, bool):
        raise InputError(f"{where} must be a count, a list of server ids, 'crashed' or 'all', not {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise InputError(f"{where} must be a positive count, not {value}")
        return Selection(count=value)
    if value == "crashed":
        return Selection(crashed=True)
    if value == "all":
        return Selection(every=True)
    if isinstance(value, list) and value:
        return Selection(ids=tuple(_server_id(v, where) for v in value))
    raise InputError(f"{where} must be a count, a list of server ids, 'crashed' or 'all', not {value!r}")


def _event(number: int, raw: Any) -> FaultEvent:
    where = f"event {number}"
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table ([[event]])")
    unknown = sorted(set(raw) - _EVENT)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_EVENT))})")
    if "at" not in raw or "action" not in raw:
        raise InputError(f"{where} needs 'at' and 'action'")
    try:
        action = Action(raw["action"])
    except ValueError:
        raise InputError(f"{where}: unknown action {raw['action']!r} (known: {', '.join(a.value for a in Action)})"
                         ) from None
    extra = sorted(set(raw) - {"at", "action"} - _ALLOWS[action])
    if extra:
        raise InputError(f"{where}: action {action.value!r} takes no {', '.join(extra)}")
    for key in _NEEDS.get(action, ()):
        if key not in raw:
            raise InputError(f"{where}: action {action.value!r} needs {key!r}")
    target = None
    if "target" in raw:
        try:
            target = Target(raw["target"])
        except ValueError:
            raise InputError(f"{where}: unknown target {raw['target']!r} (known: "
                             f"{', '.join(t.value for t in Target)}, or name servers)") from None
        if "servers" in raw:
            raise InputError(f"{where}: give servers or target, not both")
        if action is Action.RECOVER and target is Target.CENTRE:
            raise InputError(f"{where}: a recovery cannot target 'centre' (the centre now is a server that is up); "
                             "name the servers, or 'crashed'")
    servers = _selection(raw["servers"], f"{where}: servers") if "servers" in raw else None
    if action in (Action.CRASH, Action.RECOVER, Action.PARTITION) and servers is None and target is None:
        raise InputError(f"{where}: action {action.value!r} needs servers" + (" or a target" if action is not
                                                                              Action.PARTITION else ""))
    if servers is not None and servers.crashed and action is not Action.RECOVER:
        raise InputError(f"{where}: servers = 'crashed' only makes sense for 'recover'")
    messages = raw.get("messages", [])
    if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
        raise InputError(f"{where}: messages must be a list of message type names")
    links_raw = raw.get("links", [])
    if not isinstance(links_raw, list) or not all(isinstance(x, list) and len(x) == 2 for x in links_raw):
        raise InputError(f"{where}: links must be a list of [from, to] server pairs")
    if messages and links_raw:
        raise InputError(f"{where}: give messages or links, not both")
    links = tuple((_server_id(a, f"{where}: links"), _server_id(b, f"{where}: links")) for a, b in links_raw)
    for a, b in links:
        if a == b:
            raise InputError(f"{where}: links: [{a!r}, {b!r}] links a server to itself, which sends nothing over "
                             "the network")
    latency = raw.get("latency")
    if latency is not None:
        if not isinstance(latency, str):
            raise InputError(f"{where}: latency must be a text such as 'uniform:1ms:20ms'")
        try:
            parse_latency(latency, random.Random(0))
        except ValueError as error:
            raise InputError(f"{where}: latency: {error}") from None
    duration = _time(raw["duration"], f"{where}: duration") if "duration" in raw else None
    if duration == 0:
        raise InputError(f"{where}: duration must be positive")
    return FaultEvent(number, _time(raw["at"], f"{where}: at"), action, servers, target, duration,
                      _probability(raw["loss"], f"{where}: loss") if "loss" in raw else None, tuple(messages), links,
                      latency)


def _churn(raw: Any) -> Churn:
    if not isinstance(raw, dict):
        raise InputError("churn must be a table ([churn])")
    unknown = sorted(set(raw) - {"servers", "up", "down", "start", "end"})
    if unknown:
        raise InputError(f"churn: unknown key(s) {', '.join(unknown)} (known: down, end, servers, start, up)")
    missing = [k for k in ("servers", "up", "down") if k not in raw]
    if missing:
        raise InputError(f"churn needs {', '.join(missing)}")
    servers = raw["servers"]
    if (isinstance(servers, bool) or not isinstance(servers, (int, float)) or servers <= 0
            or (servers >= 1 and servers != int(servers))):
        raise InputError(f"churn: servers must be a count (≥ 1) or a fraction in (0, 1), not {servers!r}")
    draws = []
    for key in ("up", "down"):
        if not isinstance(raw[key], str):
            raise InputError(f"churn: {key} must be a duration spec such as 'exp:300'")
        try:
            draws.append(duration_distribution(raw[key]))
        except InputError as error:
            raise InputError(f"churn: {key}: {error}") from None
    start = _time(raw.get("start", 0.0), "churn: start")
    end = _time(raw["end"], "churn: end") if "end" in raw else None
    if end is not None and end <= start:
        raise InputError(f"churn: end ({end:g} s) must be after start ({start:g} s)")
    return Churn(float(servers), raw["up"], raw["down"], start, end, *draws)


def parse_scenario(document: Mapping[str, Any], source: str = "scenario") -> FaultScenario:
    """A scenario from a parsed TOML table (every check that needs no run)."""
    try:
        unknown = sorted(set(document) - _TOP)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_TOP))})")
        loss = _probability(document.get("loss", 0.0), "loss")
        by_type = document.get("loss_by_type", {})
        if not isinstance(by_type, dict):
            raise InputError("loss_by_type must be a table of message type = probability")
        loss_by_type = {name: _probability(p, f"loss_by_type.{name}") for name, p in by_type.items()}
        raw_events = document.get("event", [])
        if not isinstance(raw_events, list):
            raise InputError("event must be an array of tables ([[event]])")
        events = tuple(sorted((_event(k + 1, e) for k, e in enumerate(raw_events)), key=lambda e: e.at))
        churn = _churn(document["churn"]) if "churn" in document else None
    except InputError as error:
        raise ScenarioError(f"{source}: {error}") from None
    return FaultScenario(source, loss, loss_by_type, events, churn)


class BoundScenario(NamedTuple):
    """A fault scenario checked against a run (`FaultScenario.bind`): `positions` maps the server
    ids it names to their actors."""

    scenario: FaultScenario
    positions: Mapping[Any, int]


def load_scenario(path: Path) -> FaultScenario:
    """Read and check a scenario file (everything but what needs the run: see `FaultScenario.bind`)."""
    return parse_scenario(read_toml(path, "a fault scenario (TOML)", ScenarioError), str(path))
