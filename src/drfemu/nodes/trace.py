"""Per-event hashes of a run, for the determinism checker (`drfemu check`, issue 16).

A `Runtime` given an `EventTrace` reports every event to it, in the order it processes them:

- `deliver`: a message put in an actor's mailbox (the actor, the message);
- `timer`: a one-off timer that fires (its owner, or -1, and the callback with its arguments);
- `wake`: a wake-up a node asks for (the node, the time, the key in its `trace_form`);
- `event`: an event a node emits for the observers.

Each event becomes one line of text — its time in µs, its kind, the actor and what it carries
(a dataclass as its name and the `repr` of its field values, anything else by its `repr`) —
and one 64-bit BLAKE2b hash of that line. Messages and events are frozen dataclasses of
numbers and tuples, so two runs that did the same thing give the same hashes, in any
process. A line that shows a memory address would differ between identical runs: that is a
programming error and raises `TypeError`. Reports show events by their full `repr`, built
only when a run stops at one (building it for every event doubled a run's time).

Two ways to use a trace besides collecting hashes:
- `reference`: the hashes of an earlier run; the first event whose hash differs raises
  `Diverged` with its description (and the few events before it), which stops the run;
- `describe_at`: raise `Diverged` at event number `describe_at` — used to read what the
  reference run did there, by running it again (with the reference given, the stop says
  whether the replay's event there is the reference's own: a run that is not reproducible
  cannot be asked what it did).
"""

from __future__ import annotations

import dataclasses
from array import array
from collections import deque
from collections.abc import Callable
from functools import partial
from hashlib import blake2b
from operator import attrgetter
from typing import Any

__all__ = ["Diverged", "EventTrace", "describe_callback", "trace_form"]

CONTEXT = 5  # events before the divergent one that a report shows


class Diverged(Exception):
    """The traced run reached the event it was asked to stop at (or the first that differs)."""

    def __init__(self, index: int, at_us: int, line: str, context: list[str], agrees: bool) -> None:
        super().__init__(f"event #{index} at {at_us / 1e6:.6f} s: {line}")
        self.index = index
        self.at_us = at_us
        self.line = line
        self.context = context
        self.agrees = agrees  # the event's hash is the reference's (a `describe_at` stop on a faithful replay)


def trace_form(value: Any) -> Any:
    """`value` as a trace writes it: a wake-up key (`nodes.actor.Wake`) by its `trace_form()` — the
    tuple or text wake-up keys were before they had classes, so digests compare with earlier
    versions — anything else as it is."""
    form = getattr(value, "trace_form", None)
    return form() if form is not None else value


def describe_callback(callback: Callable[..., Any]) -> str:
    """A process-independent name of a timer callback: its qualified name and partial arguments."""
    if isinstance(callback, partial):
        args = ", ".join(repr(trace_form(a)) for a in callback.args)
        return f"{describe_callback(callback.func)}({args})"
    owner = getattr(callback, "__self__", None)
    name = getattr(callback, "__qualname__", None) or type(callback).__qualname__
    return f"{name}@{owner.id}" if owner is not None and hasattr(owner, "id") else name


def _compact(cls: type) -> Callable[[Any], str]:
    """How a trace writes values of `cls`: a dataclass as its name and field values, else `repr`."""
    if not dataclasses.is_dataclass(cls):
        return repr
    names = [f.name for f in dataclasses.fields(cls)]
    if not names:
        return lambda value: cls.__name__
    get = attrgetter(*names)
    if len(names) == 1:
        return lambda value: f"{cls.__name__}({get(value)!r})"
    return lambda value: f"{cls.__name__}{get(value)!r}"


class EventTrace:
    """Collects one hash per event (`hashes`), optionally checking them against a reference."""

    __slots__ = ("hashes", "count", "reference", "describe_at", "recent", "_writers")

    def __init__(self, reference: bytes | None = None, describe_at: int | None = None) -> None:
        self.hashes = array("Q")
        self.count = 0
        self.reference = array("Q", reference) if reference is not None else None
        self.describe_at = describe_at
        self.recent: deque[tuple[int, str, int, Any]] = deque(maxlen=CONTEXT)
        self._writers: dict[type, Callable[[Any], str]] = {}

    def record(self, at_us: int, kind: str, actor: int, detail: Any) -> None:
        cls = detail.__class__
        write = self._writers.get(cls)
        if write is None:
            write = self._writers[cls] = _compact(cls)
        line = f"{at_us} {kind} {actor} {write(detail)}"
        if " at 0x" in line:
            raise TypeError(f"a traced {kind} shows a memory address, which differs between identical runs: {line}")
        value = int.from_bytes(blake2b(line.encode(), digest_size=8).digest(), "little")
        index = self.count
        reference = self.reference
        if reference is not None:
            agrees = index < len(reference) and reference[index] == value
            if not agrees or index == self.describe_at:
                raise self._stop(index, at_us, kind, actor, detail, agrees)
        elif index == self.describe_at:
            raise self._stop(index, at_us, kind, actor, detail, False)
        self.hashes.append(value)
        self.recent.append((at_us, kind, actor, detail))
        self.count = index + 1

    def _stop(self, index: int, at_us: int, kind: str, actor: int, detail: Any, agrees: bool) -> Diverged:
        context = [f"{t / 1e6:.6f} s: {k} {a} {d!r}" for t, k, a, d in self.recent]
        return Diverged(index, at_us, f"{kind} {actor} {detail!r}", context, agrees)

    def digest(self) -> str:
        """One hash of the whole run's events."""
        return blake2b(self.hashes.tobytes(), digest_size=16).hexdigest()
