"""The probe's answer to a load request in C (`protocols._probe.replies_of`) against its reference,
`ProbeRule.load_replies` with `load_reply`, `lowest_notice` and `_lowest`: the same replies, state,
calls and exceptions on any rule and server, plain or hostile (issue 58)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.nodes.server import server_class
from drfemu.protocols import probe
from drfemu.protocols.probe import LoadReply, LowestShare, ProbeRule

_probe = compiled_module("drfemu.protocols._probe")
needs_probe = pytest.mark.skipif(_probe is None, reason=f"drfemu.protocols._probe: {SKIP_REASON}")


class IntSub(int):
    """An int that is not an exact int."""


class StrSub(str):
    """A str that is not an exact str."""


class Logged(ProbeRule):
    """A probe rule whose band is a property that notes its reads."""

    __slots__ = ("log", "_band")

    @property  # type: ignore[override]
    def band(self) -> Any:
        self.log.append(("read band",))
        return self._band

    @band.setter
    def band(self, value: Any) -> None:
        self._band = value


class OwnReply(ProbeRule):
    """A rule with a load reply of its own."""

    __slots__ = ("log",)

    def load_reply(self, server: Any) -> Any:
        self.log.append(("own load reply",))
        return LoadReply(-1, 0.0)


class OwnNotice(ProbeRule):
    """A rule with a lowest notice and a minimum of its own."""

    __slots__ = ("log",)

    def lowest_notice(self) -> Any:
        self.log.append(("own notice",))
        return None

    def _lowest(self) -> Any:
        self.log.append(("own lowest",))
        return (0.5, 1, 1)


class Eq:
    """A task that notes every comparison made with it."""

    log: list[Any] = []

    def __eq__(self, other: object) -> bool:
        Eq.log.append(("eq",))
        return False

    def __lt__(self, other: object) -> bool:
        Eq.log.append(("lt",))
        return False

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "Eq()"


RULES = {"plain": ProbeRule, "logged": Logged, "own-reply": OwnReply, "own-notice": OwnNotice}
NUMBERS = {"half": 0.5, "quarter": 0.25, "zero": 0.0, "negative-zero": -0.0, "nan": math.nan, "inf": math.inf,
           "int": 1, "huge": 2**70, "intsub": IntSub(1)}
TICKS = {"int": 20, "small": 3, "huge": 2**70, "largest": 2**63 - 1, "negative": -(2**63), "float": 20.0,
         "intsub": IntSub(20)}
# Plain values mostly, so that the C's own path runs on most draws, and every kind of other value sometimes.
USERS = st.sampled_from([1, 2, 3, 4, 5] * 4 + [IntSub(6), 2**70])
TASKS = st.sampled_from([0, 1, 7] * 6 + [2**70, 1.0, "eq"])
SHARES = st.sampled_from(["half", "quarter", "zero", "negative-zero"] * 4 + ["nan", "int"])
entries = st.tuples(SHARES, st.integers(-5, 25), st.integers(-5, 25), TASKS)
minimums = st.one_of(st.none(), st.tuples(SHARES, USERS, TASKS), st.tuples(SHARES, USERS, TASKS), st.just("list"))

worlds = st.fixed_dictionaries({
    "rule": st.sampled_from(["plain", "plain", "plain", "logged", "own-reply", "own-notice"]),
    "shadow": st.sampled_from([None, None, None, "lowest_notice", "_lowest", "load_reply"]),
    "mode": st.sampled_from(["cpu", "cpu", "cpu", "dominant", "strsub", "int"]),
    "band": st.sampled_from([0.5, 0.5, 0.5, 0.5, 0.0, 0, 1, "x", None]),
    "low_known": st.sampled_from([True, True, False, False, False, 1, 0]),
    "low": minimums,
    "said": st.one_of(st.just("none"), st.just("same"), st.just("same-no-notice"), minimums, st.just("bad")),
    "heard": st.dictionaries(USERS, entries, max_size=5),
    "counting": st.sets(USERS, max_size=5),
    "counting_heard": st.sampled_from([True, True, True, False]),  # only users heard count, as in a run
    "ticks": st.sampled_from(sorted(TICKS)),
    "said_load": st.sampled_from(["none", "same", "other", "int-load", "wrong-type", "missing"]),
    "server": st.sampled_from(["node", "node", "node", "duck"]),
    "free": st.sampled_from(["half", "half", "zero", "int", "nan", "inf", "empty", "tuple"]),
    "capacity": st.sampled_from(["one", "one", "zero", "negative", "nan", "int", "empty", "list"]),
    "patched": st.sampled_from([None] * 12 + ["cpu_load", "LowestShare", "HEARD_TICKS", "STUCK_TICKS"]),
})


class Duck:
    """A server whose fields are plain attributes."""


def number(name: Any) -> Any:
    return NUMBERS[name] if isinstance(name, str) else name


def task_of(task: Any) -> Any:
    return Eq() if task == "eq" else task


def minimum(drawn: Any) -> Any:
    if drawn is None or drawn == "list":
        return None if drawn is None else [0.25, 3, 7]
    return (number(drawn[0]), drawn[1], task_of(drawn[2]))


def world(spec: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """The rule and server of a drawn request, and the log both write to."""
    log: list[Any] = []
    Eq.log = log
    rule: Any = RULES[spec["rule"]]()
    if not isinstance(rule, ProbeRule) or spec["rule"] != "plain":
        rule.log = log
    if spec["shadow"] is not None:
        rule.__dict__[spec["shadow"]] = lambda *args: log.append(("instance " + spec["shadow"],)) or None
    rule.mode = {"strsub": StrSub("cpu"), "int": 1}.get(spec["mode"], spec["mode"])
    rule.band = spec["band"]
    rule.low_known = spec["low_known"]
    rule.low = minimum(spec["low"])
    said = spec["said"]
    if said == "none":
        rule.said_lowest = (None, None)
    elif said in ("same", "same-no-notice"):
        low = rule.low if isinstance(rule.low, tuple) else (0.25, 3, 7)
        rule.said_lowest = (low, None if said == "same-no-notice" else LowestShare(low[1], low[2], low[0]))
    elif said == "bad":
        rule.said_lowest = "no"
    else:
        low = minimum(said)
        rule.said_lowest = (low, LowestShare(0, 0, 0.0))
    rule.heard = {user: (number(e[0]), e[1], e[2], task_of(e[3])) for user, e in spec["heard"].items()}
    drawn, heard = set(spec["counting"]), set(rule.heard)
    rule.counting = ((drawn & heard) | (heard if len(drawn) % 2 == 0 else set())) if spec["counting_heard"] else drawn
    rule.ticks = TICKS[spec["ticks"]]
    free = {"half": [2.0, 1.0], "zero": [0.0], "int": [2, 1], "nan": [math.nan], "inf": [math.inf], "empty": [],
            "tuple": (2.0, 1.0)}[spec["free"]]
    capacity = {"one": (4.0, 2.0), "zero": (0.0,), "negative": (-4.0,), "nan": (math.nan,), "int": (4, 2), "empty": (),
                "list": [4.0, 2.0]}[spec["capacity"]]
    server: Any = Duck() if spec["server"] == "duck" else server_class(ProbeRule).__new__(server_class(ProbeRule))
    server.free, server.capacity, server.id = free, capacity, 11
    cpu = probe.cpu_load(server) if free and capacity and spec["server"] == "node" else 0.5
    said_load = spec["said_load"]
    if said_load != "missing":
        rule.said_load = {"none": None, "same": LoadReply(11, cpu), "other": LoadReply(11, 0.125),
                          "int-load": LoadReply(11, 0), "wrong-type": LowestShare(1, 1, cpu)}[said_load]
    return rule, server, log


def state(rule: Any, log: list[Any], result: Any) -> str:
    fields = {name: getattr(rule, name, "<missing>") for name in ("said_load", "said_lowest", "low", "low_known",
                                                                   "heard", "ticks")}
    counting = sorted(rule.counting, key=repr) if isinstance(getattr(rule, "counting", None), set) else None
    same = None
    if isinstance(result, tuple) and result and result[0] == "value":
        replies = result[1]
        same = (replies[0] is fields["said_load"],
                len(replies) > 1 and isinstance(fields["said_lowest"], tuple) and replies[1] is fields["said_lowest"][1],
                isinstance(fields["said_lowest"], tuple) and fields["said_lowest"][0] is fields["low"])
    return repr((fields, counting, log, same))


PATCHES = {"cpu_load": lambda server: 0.0, "LowestShare": lambda user, task, share: ("notice", user, task, share),
           "HEARD_TICKS": 2, "STUCK_TICKS": 1}


def answered(replies: Any, spec: dict[str, Any]) -> tuple[Any, str]:
    rule, server, log = world(spec)
    patched = spec["patched"]
    saved = getattr(probe, patched) if patched else None
    if patched:
        setattr(probe, patched, PATCHES[patched])
    try:
        result: Any = ("value", replies(rule, server))
    except Exception as error:  # noqa: BLE001 - the point is to compare any exception
        result = ("raised", type(error), str(error))
    finally:
        if patched:
            setattr(probe, patched, saved)
    return (repr(result), state(rule, log, result))


def compiled_replies() -> Any:
    return _probe.replies_of(ProbeRule.load_replies, ProbeRule.load_reply,  # type: ignore[union-attr]
                             ProbeRule.lowest_notice, ProbeRule._lowest)


PLAIN: dict[str, Any] = {
    "rule": "plain", "shadow": None, "mode": "cpu", "band": 0.5, "low_known": False, "low": None, "said": "none",
    "heard": {1: ("half", 19, 19, 0)}, "counting": {1}, "counting_heard": True, "ticks": "int", "said_load": "none",
    "server": "node", "free": "half", "capacity": "one", "patched": None}


@needs_probe
@settings(max_examples=3000, deadline=None)
@given(worlds)
@example({**PLAIN, "heard": {1: ("half", 19, 19, 0), 2: ("half", 19, 19, 0)}, "counting": {1, 2}})  # a tie: the lower user
@example({**PLAIN, "heard": {2: ("half", 19, 19, 0), 1: ("half", 19, 19, 0)}, "counting": {2, 1}})
@example({**PLAIN, "heard": {1: ("half", 19, -3, 0), 2: ("quarter", 5, 19, 0), 3: ("zero", 19, 19, 0)},
          "counting": {1, 2, 3}})  # heard lately but stuck, heard too long ago: both leave counting
@example({**PLAIN, "low_known": True, "low": ("negative-zero", 1, 0), "said": ("zero", 1, 0)})  # equal, not the same
@example({**PLAIN, "low_known": True, "low": ("zero", 1, 0), "said": ("negative-zero", 1, 0)})
def test_the_probes_answer_matches_its_reference_on_any_input(spec: dict[str, Any]) -> None:
    """The same replies or exception, the same stored replies and minimum (and which objects are
    reused), the same table of shares and calls, whatever the rule, its fields, the server and the
    module's globals hold."""
    assert answered(compiled_replies(), spec) == answered(ProbeRule.load_replies, spec)


@needs_probe
def test_the_answer_is_refused_other_functions_and_is_the_polls_where_built() -> None:
    with pytest.raises(TypeError, match="four functions"):
        _probe.replies_of(len, len, len, len)  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="4 functions"):
        _probe.replies_of(ProbeRule.load_replies)  # type: ignore[union-attr]
    assert type(ProbeRule.POLLS[0].replies).__name__ == "builtin_function_or_method"


@needs_probe
def test_a_class_changed_after_the_answer_was_made_is_handed_to_the_reference() -> None:
    """A message class given an attribute after the answer was made: the reference's answer."""
    replies = compiled_replies()
    before = answered(replies, PLAIN)
    LowestShare.noted = True  # type: ignore[attr-defined]
    try:
        assert answered(replies, PLAIN) == answered(ProbeRule.load_replies, PLAIN) == before
    finally:
        del LowestShare.noted  # type: ignore[attr-defined]
