"""The probe server's tick in C (`protocols._probe.tick_method`) against its reference,
`ServerNode.on_tick` with `ProbeRule.on_tick`: the same state, sends, calls and exceptions on any
rule and server, plain or hostile, and the same run (issue 58)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.nodes.server import ServerNode, server_class
from drfemu.protocols.probe import LoadRequest, ProbeRule

_probe = compiled_module("drfemu.protocols._probe")
needs_probe = pytest.mark.skipif(_probe is None, reason=f"drfemu.protocols._probe: {SKIP_REASON}")


class IntSub(int):
    """An int that is not an exact int."""


class Logged(ProbeRule):
    """A probe rule whose `offer` only notes that it was called (the offer is not the tick's)."""

    __slots__ = ("log",)

    def __init__(self) -> None:
        self.log: list[Any] = []  # first: a property of a subclass notes the constructor's writes
        super().__init__()

    def offer(self, server: Any) -> None:
        self.log.append(("offer", len(self.stored)))


class TicksAsProperty(Logged):
    """Its `ticks` is a property that notes every read and write."""

    __slots__ = ("_ticks",)

    @property  # type: ignore[override]
    def ticks(self) -> Any:
        self.log.append(("read ticks",))
        return self._ticks

    @ticks.setter
    def ticks(self, value: Any) -> None:
        self.log.append(("set ticks", value))
        self._ticks = value


class OwnTick(Logged):
    """A rule with a tick of its own: the node must call it, not the probe's."""

    __slots__ = ()

    def on_tick(self, server: Any, now: float) -> None:
        self.log.append(("own tick", now))


class Clearing(dict):  # type: ignore[type-arg]
    """A `published` whose `clear` is noted."""

    log: list[Any]

    def clear(self) -> None:
        self.log.append(("clear",))
        super().clear()


class DuckServer(server_class(Logged)):  # type: ignore[misc]
    """A probe server whose republish and send are its own."""

    __slots__ = ("log",)

    def republish(self) -> None:
        self.log.append(("republish",))

    def send(self, dst: Any, msg: Any) -> None:
        self.log.append(("send", dst))
        if dst == "boom":
            raise RuntimeError("send failed")


TICKS = {"int": 4, "zero": 0, "negative": -3, "largest": 2**63 - 1, "huge": 2**70, "float": 4.0, "intsub": IntSub(4),
         "text": "4"}
EVERY = {"one": 1, "two": 2, "three": 3, "zero": 0, "negative": -2, "float": 2.0, "intsub": IntSub(2), "one-float": 1.0}

worlds = st.fixed_dictionaries({
    "rule": st.sampled_from(["logged", "logged", "logged", "property", "own", "shadowed", "plain"]),
    "server": st.sampled_from(["node", "node", "node", "clearing", "duck", "no-published"]),
    "ticks": st.sampled_from(sorted(TICKS)), "every": st.sampled_from(sorted(EVERY)),
    "poll": st.sampled_from(["shared", "shared", "missing"]),
    "neighbors": st.one_of(st.lists(st.integers(0, 9), max_size=4), st.just("tuple"), st.just("boom"), st.just("missing")),
    "stored": st.sampled_from(["empty", "empty", "one", "list"]),
})


def world(spec: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """The rule and server of a drawn tick, and the log both write to."""
    log: list[Any] = []
    rule: Any = {"logged": Logged, "property": TicksAsProperty, "own": OwnTick, "shadowed": Logged,
                 "plain": ProbeRule}[spec["rule"]]()
    if isinstance(rule, Logged):
        rule.log = log
    if spec["rule"] == "shadowed":
        rule.__dict__["on_tick"] = lambda server, now: log.append(("instance tick", now))
    rule.ticks = TICKS[spec["ticks"]]
    rule.poll_every = EVERY[spec["every"]]
    if spec["poll"] == "shared":
        rule.poll = LoadRequest(7)
    rule.stored = {} if spec["rule"] == "plain" else {"empty": {}, "one": {3: (1, 0.5, (1.0,))}, "list": [1]}[spec["stored"]]
    server: Any = (DuckServer if spec["server"] == "duck" else server_class(Logged)).__new__(
        DuckServer if spec["server"] == "duck" else server_class(Logged))
    server.outbox = []
    if spec["server"] == "duck":
        server.log = log
    else:
        if spec["server"] != "no-published":
            server.published = {"old": 1}
            if spec["server"] == "clearing":
                server.published = Clearing(old=1)
                server.published.log = log
    server.rule = rule
    neighbors = spec["neighbors"]
    if neighbors != "missing":
        server.neighbors = {"tuple": (1, 2), "boom": [1, "boom", 2]}.get(neighbors, neighbors) \
            if isinstance(neighbors, str) else list(neighbors)
    return rule, server, log


def state(rule: Any, server: Any, log: list[Any]) -> str:
    ticks = rule.__dict__.get("ticks", getattr(rule, "_ticks", None)) if isinstance(rule, TicksAsProperty) \
        else getattr(rule, "ticks", None)
    return repr((type(ticks).__name__, ticks, getattr(rule, "low_known", None), log, getattr(server, "outbox", None),
                 dict(getattr(server, "published", {}) or {})))


def ticked(tick: Any, spec: dict[str, Any]) -> tuple[Any, str]:
    rule, server, log = world(spec)
    try:
        result: Any = ("value", tick(server, 2.5))
    except Exception as error:  # noqa: BLE001 - the point is to compare any exception
        result = ("raised", type(error), str(error))
    return result, state(rule, server, log)


@needs_probe
@settings(max_examples=2000, deadline=None)
@given(worlds)
def test_the_probe_servers_tick_matches_its_reference_on_any_input(spec: dict[str, Any]) -> None:
    """The same result or exception, the same ticks (its type too), sends, republish and offer
    calls, whatever the rule, its fields, the server and its neighbours hold."""
    compiled = _probe.tick_method(server_class(Logged))  # type: ignore[union-attr]
    assert ticked(compiled, spec) == ticked(ServerNode.on_tick, spec)


@needs_probe
def test_a_probe_server_ticks_in_c_where_it_was_built() -> None:
    """Where the C is built, every probe server class has it as its `on_tick`; a rule with no tick in C has none."""
    from drfemu.protocols.pdgdrf import PdgdrfRule

    assert type(server_class(ProbeRule).__dict__["on_tick"]).__name__ == "method_descriptor"
    assert "on_tick" not in server_class(PdgdrfRule).__dict__
