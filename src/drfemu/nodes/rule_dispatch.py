"""How a server hands a message to its rule: the dispatch entries `nodes.server.server_class` puts
in a server class's table for the rule's handlers and its polls (`protocols.polls`, issue 58), and
the acknowledgement every allocator sends before its handler of a task's request.

Each entry is called as `entry(node, msg, now)`. The C versions (`nodes._engine.rule_handler`,
`poll_answer`, `poll_record`) make the same entries without a Python frame of their own where the
engine was built; the functions below are their references (`tests/test_accelerators_hostile.py`,
`tests/test_polls.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.messages import RequestAck, TaskRequest
from drfemu.protocols.polls import Keep

__all__ = ["Entry", "acknowledging", "answer_entry", "answer_python", "record_entry", "record_python", "rule_entry",
           "to_rule_python"]

Entry = Callable[[Any, Any, float], None]
"""A dispatch entry: called as `entry(node, msg, now)`."""


def to_rule_python(handler: Callable[..., None]) -> Entry:
    """A server's dispatch entry for its rule's `handler`: `handler(node.rule, node, msg, now)`.
    The reference for `nodes._engine.rule_handler`, which makes the same entry without a Python
    frame of its own (one per message a rule handles)."""
    def dispatch(node: Any, msg: Any, now: float) -> None:
        handler(node.rule, node, msg, now)

    return dispatch


def answer_python(replies: Callable[[Any, Any], Iterable[Any]], keep: Keep = ()) -> Entry:
    """A server's dispatch entry for the requests of a poll its rule answers (`protocols.polls.Answer`):
    the request first stored as each `(table, field)` of `keep` says (as `record_python` stores a
    reply), then the replies `replies(node.rule, node)` gave, kept in `node.published` under the
    request's type until the server forgets them (`republish`), each sent to the request's sender.
    The reference for `nodes._engine.poll_answer`, which does the same without a Python frame of its own."""
    keep = tuple(keep)

    def dispatch(node: Any, msg: Any, now: float) -> None:
        for table, field in keep:
            getattr(node.rule, table)[msg.sender] = msg if field is None else getattr(msg, field)
        cls = msg.__class__
        answers = node.published.get(cls)
        if answers is None:
            answers = node.published[cls] = tuple(replies(node.rule, node))
        sender = msg.sender
        for reply in answers:
            node.send(sender, reply)

    return dispatch


def record_python(table: str, field: str | None) -> Entry:
    """A server's dispatch entry for the replies of a poll its rule records (`protocols.polls.Record`):
    the reply, or its attribute `field`, stored in the rule's dict `table` under the reply's
    sender. The reference for `nodes._engine.poll_record`."""
    def dispatch(node: Any, msg: Any, now: float) -> None:
        getattr(node.rule, table)[msg.sender] = msg if field is None else getattr(msg, field)

    return dispatch


def acknowledging(handler: Entry) -> Entry:
    """`handler` of `TaskRequest`, preceded (resilience on) by the `RequestAck` every allocator
    sends when a task's request first arrives, whichever rule handles it (a repeat is not
    acknowledged again: a user repeats a held request now and then, and acknowledging each
    repeat doubled the central protocols' messages under faults)."""
    def dispatch(node: Any, msg: TaskRequest, now: float) -> None:
        if node.rto and node.acknowledged.get(msg.user) != msg.task:
            node.acknowledged[msg.user] = msg.task
            node.send(msg.user, RequestAck(msg.task, node.id))
        handler(node, msg, now)

    return dispatch


rule_entry: Callable[[Callable[..., None]], Entry] = to_rule_python
answer_entry: Callable[[Callable[[Any, Any], Iterable[Any]], Keep], Entry] = answer_python
record_entry: Callable[[str, str | None], Entry] = record_python
if compiled_module("drfemu.nodes._engine") is not None:  # typed by its stub, `_engine.pyi`
    from drfemu.nodes._engine import poll_answer as answer_entry
    from drfemu.nodes._engine import poll_record as record_entry
    from drfemu.nodes._engine import rule_handler as rule_entry
