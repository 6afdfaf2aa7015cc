"""A DDRF server's tick in C (`protocols._ddrf.tick_method`) against its reference,
`ServerNode.on_tick` with `DdrfRule.on_tick`: the same state, sends, calls and exceptions on any
rule, homes and server, plain or hostile (issue 58)."""

from __future__ import annotations

import math
import sys
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.nodes.server import ServerNode, server_class
from drfemu.protocols.ddrf import DdrfGradientRule, DdrfRule, MinShareRequest
from drfemu.protocols.homes import HomeUser, HomeUsers

_ddrf = compiled_module("drfemu.protocols._ddrf")
needs_ddrf = pytest.mark.skipif(_ddrf is None, reason=f"drfemu.protocols._ddrf: {SKIP_REASON}")


class IntSub(int):
    """An int that is not an exact int."""


class FloatSub(float):
    """A float that is not an exact float."""


class OddUser(HomeUser):
    """A home user of another class (its `idle` is the reference's)."""

    __slots__ = ()


class OwnIdle(HomeUser):
    """A home user whose `idle` says something else."""

    __slots__ = ()

    def idle(self) -> bool:
        return True


class OddHomes(HomeUsers):
    """Homes of another class."""

    __slots__ = ()


class Stale3(DdrfRule):
    """A rule that forgets every third round."""

    __slots__ = ()
    STALE_ROUNDS: ClassVar[int] = 3


class StaleFloat(DdrfRule):
    """A rule whose STALE_ROUNDS is not an int."""

    __slots__ = ()
    STALE_ROUNDS: ClassVar[Any] = 10.0


class WithDict(DdrfRule):
    """A rule with an instance dict, which can shadow its tick."""


class OwnTick(DdrfRule):
    """A rule with a tick of its own: the node must call it."""

    __slots__ = ("log",)

    def on_tick(self, server: Any, now: float) -> None:
        self.log.append(("own tick", now))


class FrozenSub(DdrfGradientRule):
    """A gradient rule of another class."""

    __slots__ = ()


class Logging(server_class(DdrfRule)):  # type: ignore[misc]
    """A DDRF server whose allocate only notes its call (the allocation is not the tick's)."""

    __slots__ = ("log",)

    def allocate(self, user: int, record: HomeUser) -> None:
        self.log.append(("allocate", user, record.share))
        record.busy = True


class OwnSend(Logging):
    """A server whose send is its own."""

    __slots__ = ()

    def send(self, dst: Any, msg: Any) -> None:
        self.log.append(("send", dst))


ROUNDS = {"zero": 0, "four": 4, "before-forget": 8, "nine": 9, "negative": -1, "largest": 2**63 - 2,
          "last": 2**63 - 1, "huge": 2**70, "float": 4.0, "intsub": IntSub(4)}
VALUES = [0.0, 0.1, 0.2, 0.25, 0.5, math.inf, math.nan, 0, FloatSub(0.1), True]

users = st.fixed_dictionaries({
    "kind": st.sampled_from(["plain", "plain", "plain", "plain", "odd", "own-idle"]),
    "active": st.sampled_from([True, True, False, 1]), "saturated": st.sampled_from([False, False, True, 0]),
    "share": st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, math.inf, math.nan, 0, FloatSub(0.2)]),
    "pending": st.sampled_from(["task", "task", None]), "busy": st.sampled_from([False, False, True, 0]),
})

worlds = st.fixed_dictionaries({
    "rule": st.sampled_from(["plain", "plain", "plain", "frozen", "frozen", "thawed", "thawed-truthy", "frozen-sub",
                             "stale3",
                             "stale-float", "dict", "shadowed", "own"]),
    "server": st.sampled_from(["logging", "logging", "logging", "own-send"]),
    "round": st.sampled_from(sorted(ROUNDS)),
    "reported": st.one_of(st.dictionaries(st.integers(0, 9), st.sampled_from(VALUES), max_size=4),
                          st.just("list")),
    "homes": st.sampled_from(["homes", "homes", "homes", "odd", "records-list"]),
    "users": st.lists(users, max_size=4),
    "request": st.sampled_from(["shared", "shared", "none"]),
    "neighbors": st.one_of(st.lists(st.integers(0, 9), max_size=5), st.just("tuple"), st.just("missing")),
})

# Ticks whose values are all plain, which the C runs itself unless the reference would do more
# (allocate, forget, make the request): the cases where a wrong check of the C would show.
plain_users = st.fixed_dictionaries({
    "kind": st.just("plain"), "active": st.booleans(), "saturated": st.booleans(),
    "share": st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, math.inf, math.nan]),
    "pending": st.sampled_from(["task", None]), "busy": st.booleans(),
})
plain_worlds = st.fixed_dictionaries({
    "rule": st.sampled_from(["plain", "frozen", "thawed", "dict", "stale3"]), "server": st.just("logging"),
    "round": st.sampled_from(["zero", "four", "before-forget", "nine", "largest", "last"]),
    "reported": st.dictionaries(st.integers(0, 9), st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.5, math.inf, math.nan]),
                                max_size=4),
    "homes": st.just("homes"), "users": st.lists(plain_users, max_size=4),
    "request": st.sampled_from(["shared", "shared", "shared", "none"]),
    "neighbors": st.lists(st.integers(0, 9), max_size=5),
})


def user_record(spec: dict[str, Any]) -> HomeUser:
    record = {"plain": HomeUser, "odd": OddUser, "own-idle": OwnIdle}[spec["kind"]](0.1)
    record.active, record.saturated, record.share = spec["active"], spec["saturated"], spec["share"]
    record.pending = None if spec["pending"] is None else MinShareRequest(99, 0.0)  # any object: a task
    record.busy = spec["busy"]
    return record


def world(spec: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """The rule and server of a drawn tick, and the log both write to."""
    log: list[Any] = []
    made = {"plain": DdrfRule, "frozen": DdrfGradientRule, "thawed": DdrfGradientRule,
            "thawed-truthy": DdrfGradientRule, "frozen-sub": FrozenSub,
            "stale3": Stale3, "stale-float": StaleFloat, "dict": WithDict, "shadowed": WithDict, "own": OwnTick}
    rule: Any = made[spec["rule"]]()
    if spec["rule"] in ("frozen", "frozen-sub"):
        rule.frozen = True
    elif spec["rule"] == "thawed-truthy":
        rule.frozen = 1  # truthy: the gradient's own tick is skipped, as when frozen
    if spec["rule"] == "shadowed":
        rule.__dict__["on_tick"] = lambda server, now: log.append(("instance tick", now))
    if spec["rule"] == "own":
        rule.log = log
    rule._round = ROUNDS[spec["round"]]
    rule.reported = [0.1] if spec["reported"] == "list" else dict(spec["reported"])
    rule._askers = {4, 5}
    rule._polled = {5: MinShareRequest(5, 0.3)}
    rule._request = MinShareRequest(7, 0.125) if spec["request"] == "shared" else None
    cls = OwnSend if spec["server"] == "own-send" else Logging
    server: Any = cls.__new__(cls)
    server.id = 7
    server.outbox = []
    server.log = log
    server.idle_tick = False
    server.rule = rule
    homes: Any = (OddHomes if spec["homes"] == "odd" else HomeUsers)({})
    records = {u: user_record(user) for u, user in enumerate(spec["users"])}
    homes.records = list(records.items()) if spec["homes"] == "records-list" and records else records
    server.homes = homes
    neighbors = spec["neighbors"]
    if neighbors != "missing":
        server.neighbors = (1, 2) if neighbors == "tuple" else list(neighbors)
    return rule, server, log


def state(rule: Any, server: Any, log: list[Any]) -> str:
    records = server.homes.records
    users = [(u, r.busy) for u, r in (records.items() if isinstance(records, dict) else records)]
    return repr((type(rule._round).__name__, rule._round, rule.reported, sorted(rule._askers), rule._polled,
                 rule._request, log, server.outbox, server.idle_tick, users))


def ticked(tick: Any, spec: dict[str, Any]) -> tuple[Any, str]:
    rule, server, log = world(spec)
    try:
        result: Any = ("value", tick(server, 2.5))
    except Exception as error:  # noqa: BLE001 - the point is to compare any exception
        result = ("raised", type(error), str(error))
    return result, state(rule, server, log)


def runs_python(tick: Any, spec: dict[str, Any]) -> bool:
    """Did the tick run any Python function (the reference's, handed the tick)?"""
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    rule, server, log = world(spec)
    sys.setprofile(profile)
    try:
        tick(server, 2.5)
    except Exception:  # noqa: BLE001,S110 - only whether Python ran matters here
        pass
    finally:
        sys.setprofile(None)
    return bool(calls)


def plain_tick(spec: dict[str, Any]) -> bool:
    """Is the drawn tick one the C runs itself (the contract in `src/native/_ddrf.c`)? Read in
    the reference's order: a value it would not read does not count."""
    reported, rounds = spec["reported"], ROUNDS[spec["round"]]
    stale = {"plain": 10, "frozen": 10, "dict": 10, "stale3": 3}.get(spec["rule"])
    if stale is None or spec["server"] != "logging" or spec["homes"] != "homes" or type(rounds) is not int \
            or not 0 <= rounds < 2**63 - 1 or (rounds + 1) % stale == 0 or not spec["users"] \
            or spec["request"] != "shared" or not isinstance(spec["neighbors"], list) or reported == "list" \
            or any(type(value) is not float for value in reported.values()):
        return False
    bound = min(reported.values(), default=math.inf)
    best = None
    if any(u["kind"] != "plain" for u in spec["users"]):
        return False
    for u in spec["users"]:
        if type(u["active"]) is not bool:
            return False
        if not u["active"]:
            continue
        if type(u["saturated"]) is not bool:
            return False
        if u["saturated"]:
            continue
        if type(u["share"]) is not float:
            return False
        if not u["share"] <= bound or (best is not None and not u["share"] < best):
            continue
        if u["pending"] is None:
            continue
        if type(u["busy"]) is not bool:
            return False
        if not u["busy"]:
            best = u["share"]
    return best is None


@needs_ddrf
@settings(max_examples=3000, deadline=None)
@given(st.one_of(plain_worlds, worlds))
def test_a_ddrf_servers_tick_matches_its_reference_on_any_input(spec: dict[str, Any]) -> None:
    """The same result or exception, the same round (its type too), tables, request, sends,
    allocations and idle flag, whatever the rule, its fields, the homes and the server hold."""
    cls = OwnSend if spec["server"] == "own-send" else Logging
    compiled = _ddrf.tick_method(cls)  # type: ignore[union-attr]
    assert ticked(compiled, spec) == ticked(ServerNode.on_tick, spec)
    assert runs_python(compiled, spec) is not plain_tick(spec)  # the C runs the plain ticks itself, and only those


def plain(**fields: Any) -> dict[str, Any]:
    """A tick the C runs itself unless a field says otherwise."""
    spec = {"rule": "plain", "server": "logging", "round": "four", "reported": {1: 0.2, 2: 0.25}, "homes": "homes",
            "users": [{"kind": "plain", "active": True, "saturated": False, "share": 0.1, "pending": "task",
                       "busy": True}], "request": "shared", "neighbors": [3, 1, 3]}
    return {**spec, **fields}


def user(**fields: Any) -> dict[str, Any]:
    return {"kind": "plain", "active": True, "saturated": False, "share": 0.1, "pending": "task", "busy": False,
            **fields}


@needs_ddrf
@pytest.mark.parametrize("spec", [
    plain(),  # busy: nothing to allocate; the round counted, the request to each neighbour in order
    plain(users=[user()]),  # idle and within the bound: allocated (the reference's tick)
    plain(users=[user(share=0.25)]),  # at the bound exactly: allocated
    plain(users=[user(share=0.3)]),  # above it: not
    plain(users=[user(share=0.3), user(share=0.2, busy=True), user(share=0.1)]),  # the lowest idle one
    plain(reported={}, users=[user(share=math.inf)]),  # no report: the bound is +inf
    plain(round="nine"),  # the round that forgets silent askers
    plain(round="last"),
    plain(request="none", users=[user(busy=True)]),  # the request made anew
    plain(rule="frozen"), plain(rule="frozen", users=[user()]), plain(rule="thawed"), plain(rule="thawed-truthy"),
    plain(homes="homes", users=[]),  # no user homed: the idle flag
], ids=lambda spec: repr(spec)[:60])
def test_explicit_ticks(spec: dict[str, Any]) -> None:
    """Ticks of each kind the C meets on a run, and the edges of its checks, against the reference."""
    compiled = _ddrf.tick_method(Logging)  # type: ignore[union-attr]
    assert ticked(compiled, spec) == ticked(ServerNode.on_tick, spec)
    assert runs_python(compiled, spec) is not plain_tick(spec)


@needs_ddrf
def test_a_ddrf_server_ticks_in_c_where_it_was_built() -> None:
    """Where the C is built, the DDRF servers' classes have it as their `on_tick`."""
    for rule in (DdrfRule, DdrfGradientRule):
        assert type(server_class(rule).__dict__["on_tick"]).__name__ == "method_descriptor"


@needs_ddrf
@pytest.mark.parametrize("method", ["lowest", "__bool__", "idle"])
def test_a_patched_homes_method_is_called_as_python_calls_it(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class's `lowest`, `__bool__` or `idle` replaced after the C met the references: the tick
    is the reference's, which calls the replacement."""
    compiled = _ddrf.tick_method(Logging)  # type: ignore[union-attr]
    spec = plain()
    assert not runs_python(compiled, spec)  # the references met first
    calls: list[str] = []
    original = {"lowest": HomeUsers.lowest, "__bool__": HomeUsers.__bool__, "idle": HomeUser.idle}[method]

    def replaced(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(HomeUser if method == "idle" else HomeUsers, method, replaced)
    reference = ticked(ServerNode.on_tick, spec)
    expected, calls[:] = list(calls), []
    assert ticked(compiled, spec) == reference
    assert calls == expected == [method]
