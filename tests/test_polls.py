"""Polls as an engine primitive (issue 58, `protocols.polls`): the dispatch entries that answer a
request from what a rule published and record a reply in its table, compiled and in Python, do
the same Python operations in the same order on any input; a rule cannot both handle and poll
one message type. (That runs with polls are the runs before them, event for event, is held by
`drfemu check` and `tests/test_engine_c.py`.)"""

from __future__ import annotations

from typing import Any

import pytest

from drfemu.kernel.messages import Address, handles, message
from drfemu.nodes import rule_dispatch
from drfemu.nodes.rule_dispatch import answer_python, record_python
from drfemu.nodes.server import server_class
from drfemu.protocols.polls import Answer, Record
from drfemu.protocols.rule import ServerRule

ENTRIES: list[tuple[str, Any, Any]] = [("python", answer_python, record_python)]
if rule_dispatch.answer_entry is not answer_python:
    ENTRIES.append(("c", rule_dispatch.answer_entry, rule_dispatch.record_entry))


@message
class Ask:
    sender: Address


@message
class Tell:
    sender: Address
    value: float


class Rule:
    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.table: dict[Any, Any] = {}
        self.version = 0

    def replies(self, node: Any) -> Any:
        self.log.append(("replies", self.version))
        return [Tell(node.id, float(self.version)), Tell(node.id, -1.0)]  # any iterable: kept as a tuple


class Node:
    def __init__(self, log: list[Any]) -> None:
        self.id = 7
        self.rule = Rule(log)
        self.published: dict[type, tuple[Any, ...]] = {}
        self.sent: list[tuple[int, Any]] = []
        self.log = log

    def send(self, dst: int, msg: Any) -> None:
        self.log.append(("send", dst, msg))
        self.sent.append((dst, msg))


def _answer_twice(answer: Any) -> list[Any]:
    log: list[Any] = []
    node = Node(log)
    entry = answer(Rule.replies)
    assert entry(node, Ask(3), 0.0) is None
    entry(node, Ask(4), 0.0)  # the same published replies, not asked again
    node.rule.version = 1
    node.published.clear()  # what `republish` does
    entry(node, Ask(5), 0.0)
    assert node.published == {Ask: (Tell(7, 1.0), Tell(7, -1.0))}
    return log


@pytest.mark.parametrize(("name", "answer", "record"), ENTRIES)
def test_an_answered_request_gets_what_the_rule_published_asked_once_until_republished(name: str, answer: Any,
                                                                                       record: Any) -> None:
    log = _answer_twice(answer)
    assert log == [("replies", 0), ("send", 3, Tell(7, 0.0)), ("send", 3, Tell(7, -1.0)),
                   ("send", 4, Tell(7, 0.0)), ("send", 4, Tell(7, -1.0)),
                   ("replies", 1), ("send", 5, Tell(7, 1.0)), ("send", 5, Tell(7, -1.0))]


@message
class AskWith:
    sender: Address
    value: float


@pytest.mark.parametrize(("name", "answer", "record"), ENTRIES)
def test_an_answered_request_is_kept_as_keep_says_before_it_is_answered(name: str, answer: Any, record: Any) -> None:
    log: list[Any] = []
    node = Node(log)
    node.rule.table = LoggingTable(log)
    node.rule.asks = LoggingTable(log)
    entry = answer(Rule.replies, (("table", "value"), ("asks", None)))
    entry(node, AskWith(3, 0.5), 0.0)
    entry(node, AskWith(3, 0.25), 0.0)
    assert log == [("set", 3, 0.5), ("set", 3, AskWith(3, 0.5)), ("replies", 0), ("send", 3, Tell(7, 0.0)),
                   ("send", 3, Tell(7, -1.0)), ("set", 3, 0.25), ("set", 3, AskWith(3, 0.25)),
                   ("send", 3, Tell(7, 0.0)), ("send", 3, Tell(7, -1.0))]
    assert node.rule.table == {3: 0.25} and node.rule.asks == {3: AskWith(3, 0.25)}


def test_an_answer_keeps_pairs_of_a_table_and_a_field_or_none() -> None:
    assert Answer(Ask, Rule.replies, (("table", None), ("table", "value"))).keep == (("table", None), ("table", "value"))
    for keep in ((("table",),), [("table", None)], (("table", 1),), ((1, None),)):
        with pytest.raises(TypeError, match="keep is a tuple of"):
            Answer(Ask, Rule.replies, keep)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "answer", "record"), ENTRIES)
def test_a_recorded_reply_goes_to_the_rules_table_under_its_sender(name: str, answer: Any, record: Any) -> None:
    node = Node([])
    record("table", None)(node, Tell(2, 0.5), 0.0)
    record("table", "value")(node, Tell(3, 0.25), 0.0)
    assert node.rule.table == {2: Tell(2, 0.5), 3: 0.25}


class Hostile:
    """Attributes that log when they are read, to hold the order of reads to the reference's."""

    def __init__(self, log: list[Any], **values: Any) -> None:
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        self._log.append(("read", name))
        if name not in self._values:
            raise AttributeError(name)
        return self._values[name]


class LoggingTable(dict[Any, Any]):
    def __init__(self, log: list[Any]) -> None:
        super().__init__()
        self.log = log

    def get(self, key: Any, default: Any = None) -> Any:
        self.log.append(("get", key))
        return super().get(key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.log.append(("set", key, value))
        super().__setitem__(key, value)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as error:  # noqa: BLE001 - the outcome is compared
        return type(error).__name__, str(error)


def _hostile_cases() -> list[Any]:
    def node_without_published(log: list[Any]) -> tuple[Any, Any]:
        return Hostile(log, rule=Rule(log), send=lambda d, m: log.append(("send", d, m))), Hostile(log, sender=1)

    def published_of_its_own(log: list[Any]) -> tuple[Any, Any]:
        rule = Rule(log)
        return Hostile(log, rule=rule, published=LoggingTable(log), id=1,
                       send=lambda d, m: log.append(("send", d, m))), Hostile(log, sender=9)

    def message_without_sender(log: list[Any]) -> tuple[Any, Any]:
        return Hostile(log, rule=Rule(log), published={}, id=1, send=lambda d, m: None), Hostile(log)

    def replies_not_iterable(log: list[Any]) -> tuple[Any, Any]:
        rule = Hostile(log)
        return Hostile(log, rule=rule, published={}, id=1, send=lambda d, m: None), Hostile(log, sender=2)

    def send_raises(log: list[Any]) -> tuple[Any, Any]:
        def send(d: Any, m: Any) -> None:
            log.append(("send", d, m))
            raise RuntimeError("no")
        return Hostile(log, rule=Rule(log), published={}, id=1, send=send), Hostile(log, sender=2)

    def published_not_a_mapping(log: list[Any]) -> tuple[Any, Any]:
        return Hostile(log, rule=Rule(log), published=[], id=1, send=lambda d, m: None), Hostile(log, sender=2)

    return [node_without_published, published_of_its_own, message_without_sender, replies_not_iterable, send_raises,
            published_not_a_mapping]


@pytest.mark.skipif(len(ENTRIES) < 2, reason="the compiled entries are not built")
@pytest.mark.parametrize("case", _hostile_cases(), ids=lambda case: case.__name__)
def test_the_compiled_answer_matches_its_reference_on_hostile_input(case: Any) -> None:
    def replies(rule: Any, node: Any) -> Any:
        if isinstance(rule, Hostile):
            return 5  # not iterable
        return Rule.replies(rule, node)

    runs = []
    for _, answer, _ in ENTRIES:
        log: list[Any] = []
        node, msg = case(log)
        runs.append((_outcome(lambda: answer(replies)(node, msg, 0.0)), log))
    assert runs[0] == runs[1]


@pytest.mark.skipif(len(ENTRIES) < 2, reason="the compiled entries are not built")
@pytest.mark.parametrize("keep", [(("table", "value"),), (("missing", None),), (("table", "absent"), ("table", None)),
                                  [("table", None)], (("table", None, "extra"),), (("table", 3),), "ab", 5])
def test_the_compiled_answer_keeps_a_request_as_its_reference_on_hostile_input(keep: Any) -> None:
    """The compiled entry takes an exact tuple of (str, str or None) pairs; anything else is the
    reference's, which fails where Python fails: when it is made, or when it is called."""
    runs = []
    for _, answer, _ in ENTRIES:
        log: list[Any] = []
        rule = Rule(log)
        rule.table = LoggingTable(log)
        node = Hostile(log, rule=rule, published={}, id=1, send=lambda d, m, log=log: log.append(("send", d, m)))
        made = _outcome(lambda: answer(Rule.replies, keep))
        outcome = made if made[0] != "ok" else _outcome(lambda: made[1](node, Hostile(log, sender=4, value=0.5), 0.0))
        runs.append((outcome, [entry if entry[0] != "set" else entry[:2] for entry in log]))
    assert runs[0] == runs[1]


@pytest.mark.skipif(len(ENTRIES) < 2, reason="the compiled entries are not built")
@pytest.mark.parametrize(("table", "field", "has"), [("table", None, {"sender": 1}), ("table", "value", {"sender": 1}),
                                                     ("table", "value", {"value": 2}), ("missing", None, {"sender": 1}),
                                                     ("table", None, {})])
def test_the_compiled_record_matches_its_reference_on_hostile_input(table: str, field: str | None,
                                                                    has: dict[str, Any]) -> None:
    runs = []
    for _, _, record in ENTRIES:
        log: list[Any] = []
        rule = Hostile(log, table=LoggingTable(log))
        node, msg = Hostile(log, rule=rule), Hostile(log, **has)
        outcome = _outcome(lambda: record(table, field)(node, msg, 0.0))
        runs.append((outcome, [entry if entry[0] != "set" else entry[:2] for entry in log]))
    assert runs[0] == runs[1]


def test_a_rule_cannot_both_handle_and_poll_a_message() -> None:
    class Both(ServerRule):
        @handles(Tell)
        def on_tell(self, server: Any, msg: Tell, now: float) -> None:
            pass

        POLLS = (Record(Tell, "table"),)

    with pytest.raises(TypeError, match="declares a poll on Tell"):
        server_class(Both)


def test_a_rule_with_polls_gets_their_entries_in_its_servers_dispatch() -> None:
    class Polling(ServerRule):
        def replies(self, server: Any) -> tuple[Tell]:
            return (Tell(server.id, 0.0),)

        POLLS = (Answer(Ask, replies), Record(Tell, "table", "value"))

    dispatch = server_class(Polling).DISPATCH
    assert dispatch[Ask] is not None and dispatch[Tell] is not None


def _calls_while_the_classes_change(answer: Any, record: Any) -> list[Any]:
    """Answers and records on objects with `__slots__` (as a run's are), the classes changed
    between calls: every read must be Python's at the time of the call."""
    from drfemu.nodes.actor import Actor

    class SlotRule:
        __slots__ = ("table", "kept")

        def __init__(self) -> None:
            self.table: dict[Any, Any] = {}
            self.kept: dict[Any, Any] = {}

        def replies(self, node: Any) -> tuple[Any, ...]:
            return (Reply(node.id, 1.0), Reply(node.id, 2.0))

    class SlotNode(Actor):
        __slots__ = ("rule", "published")
        rule: Any
        published: Any

    class Req:
        __slots__ = ("sender", "value")

        def __init__(self, sender: Any, value: Any = None) -> None:
            SENDER.__set__(self, sender)  # the slot itself, whatever the class holds under the name now
            if value is not None:
                self.value = value

    SENDER = Req.__dict__["sender"]

    class ReqTwin:
        __slots__ = ("sender", "value")

    class Reply:
        __slots__ = ("sender", "value")

        def __init__(self, sender: Any, value: float) -> None:
            self.sender, self.value = sender, value

    node = SlotNode(5)
    setattr(node, "rule", SlotRule())
    setattr(node, "published", {})
    asked = answer(SlotRule.replies, (("kept", "value"), ("kept", None)))
    told = record("table", "value")
    other_table: dict[Any, Any] = {}
    seen: list[Any] = []

    def step(label: str, request: Any, reply: Any) -> None:
        node.outbox.clear()
        outcome = (_outcome(lambda: asked(node, request, 0.0)), _outcome(lambda: told(node, reply, 0.0)))
        seen.append((label, outcome, [(dst, type(msg).__name__, getattr(msg, "value", None)) for dst, msg in node.outbox],
                     sorted((k, type(v).__name__, getattr(v, "value", None)) for k, v in node.rule.kept.items()),
                     sorted(node.rule.table.items()), sorted(other_table.items())))

    step("first", Req(1, 0.5), Reply(2, 0.25))
    step("again", Req(3, 0.75), Reply(4, 0.125))
    setattr(Req, "sender", property(lambda self: 99))
    step("a property in place of a slot", Req(6, 1.5), Reply(6, 3.0))
    delattr(Req, "sender")
    step("no such attribute", Req(7, 3.5), Reply(7, 3.5))
    setattr(Req, "sender", SENDER)
    step("the slot back", Req(8, 4.0), Reply(8, 4.5))
    step("a slot never set", Req(9), Reply(9, 5.0))
    twin = Req(10, 5.5)
    setattr(twin, "__class__", ReqTwin)
    step("another class of the same layout", twin, Reply(10, 6.0))
    setattr(SlotRule, "table", property(lambda self: other_table))
    step("the rule's table a property", Req(11, 6.5), Reply(11, 7.0))
    setattr(SlotNode, "send", lambda self, dst, msg: self.outbox.append((-dst, msg)))
    step("a send of the node's own", Req(12, 7.5), Reply(12, 8.0))
    delattr(SlotNode, "send")
    node.published.clear()
    setattr(SlotNode, "published", property(lambda self: {Req: (Reply(0, -1.0),)}))
    step("published a property", Req(13, 8.5), Reply(13, 9.0))
    return seen


@pytest.mark.skipif(len(ENTRIES) < 2, reason="the compiled entries are not built")
def test_the_compiled_entries_read_attributes_as_python_does_while_classes_change() -> None:
    """The compiled entries remember where a type keeps a `__slots__` attribute (issue 58), and
    must notice every change to the type that changes the read."""
    runs = [_calls_while_the_classes_change(answer, record) for _, answer, record in ENTRIES]
    assert runs[0] == runs[1]
    assert {label for label, *_ in runs[0]} >= {"first", "a send of the node's own"}


@pytest.mark.skipif(len(ENTRIES) < 2, reason="the compiled entries are not built")
def test_the_compiled_rule_handler_reads_the_rule_as_python_does_while_the_class_changes() -> None:
    from drfemu.nodes.actor import Actor

    def calls(entry_of: Any) -> list[Any]:
        class SlotNode(Actor):
            __slots__ = ("rule",)

        seen: list[Any] = []
        entry = entry_of(lambda rule, node, msg, now: seen.append((rule, msg)))
        node = SlotNode(1)
        setattr(node, "rule", "first")
        entry(node, 1, 0.0)
        entry(node, 2, 0.0)
        setattr(SlotNode, "rule", property(lambda self: "a property"))
        entry(node, 3, 0.0)
        delattr(SlotNode, "rule")
        seen.append(_outcome(lambda: entry(node, 4, 0.0)))
        return seen

    reference, compiled = calls(rule_dispatch.to_rule_python), calls(rule_dispatch.rule_entry)
    assert reference == compiled
    assert reference[2] == ("a property", 3) and reference[3][0] == "AttributeError"
