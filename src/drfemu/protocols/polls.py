"""Polls as an engine primitive (issue 58): what a rule publishes, and where its neighbours' answers go.

A poll is a fixed pattern: a server asks each neighbour something, and the neighbour's answer is
a snapshot of some state it publishes at the moment it is asked. The probe polls every
neighbour's load every tick, DDRF every neighbour's minimum share, so polls are most of their
messages. A rule declares the pattern in `POLLS` (`protocols.rule.ServerRule`) instead of
handling each message itself, and the engine (`nodes.server`, `nodes.rule_dispatch`) carries it out:

- `Answer(request, replies, keep)`: every `request` a server receives (a message with a `sender`) is
  answered, to its sender, with what `replies(rule, server)` returns — the rule's
  published state, as a tuple of messages. The engine asks `replies` once and sends the same
  replies to every request until the state may have changed: the server forgets them whenever
  its free resources change, and the rule calls `server.republish()` whenever anything else they
  are made of changes (a rule that cannot tell calls it at every input that could). So what
  `replies` returns must depend on nothing but that state, and then what a request gets is
  exactly what a handler computing it at that moment would send. A request that also tells the
  replier something (DDRF's carries the asker's own share) is first kept as each `(table, field)`
  pair of `keep` says: the request, or its attribute `field`, stored in the rule's dict `table`
  under its sender, as `Record` stores a reply.
- `Record(reply, table, field=None)`: every `reply` a server receives is stored in the rule's
  dict `table` under the reply's `sender`: the reply itself, or its attribute `field`.

The requests themselves are the rule's to send (`server.send` in `on_tick`, to whom and how often
it likes). Every poll message is still a message — the same latency, loss, partitions, crashes,
per-type loss rules, tallies and trace events as any other — and only its handling moved into the
engine: a compiled entry answers or records it without a Python frame where `nodes._engine` was
built (`nodes.rule_dispatch.answer_python` and `record_python` are the reference).

A message type is handled once: a rule that declares a poll on a type it handles with `@handles`,
or that its server handles, or twice, is refused when its server class is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "Keep", "Poll", "Record"]


Keep = tuple[tuple[str, str | None], ...]
"""Where an answered request is stored first: `(table, field or None)` pairs (`Answer.keep`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer every `request` (it has a `sender`) with what `replies(rule, server)` returns
    (a tuple of messages, sent in order), asked again only after the published state may have changed;
    before that, keep the request as each `(table, field)` of `keep` says (`Record`'s storing, in order)."""

    request: type
    replies: Callable[[Any, Any], tuple[Any, ...]]
    keep: Keep = ()

    def __post_init__(self) -> None:
        if not isinstance(self.keep, tuple) or not all(
                isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                and (pair[1] is None or isinstance(pair[1], str)) for pair in self.keep):
            raise TypeError(f"Answer({self.request.__name__}, …): keep is a tuple of (table, field or None) pairs, "
                            f"not {self.keep!r}")


@dataclass(frozen=True, slots=True)
class Record:
    """Store every `reply` (it has a `sender`) in the rule's dict `table` under its sender: the
    reply itself, or with `field` its attribute of that name."""

    reply: type
    table: str
    field: str | None = None


Poll = Answer | Record
"""One part of a poll, as a rule declares it in `POLLS`."""
