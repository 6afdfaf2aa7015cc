"""The C accelerators (`nodes/_engine.c`, `overlay/_cyclon.c`, `overlay/_rank.c`) change nothing
but speed: each engine loop agrees with its Python reference on arbitrary inputs (the merges
are checked so in `test_cyclon.py` and `test_gradient.py`), and whole runs with every
accelerator swapped for its reference give the same events, one hash per event."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.running.check import traced_run
from experiments.running.params import canonical_params
from nodes import actor as actor_module
from nodes import network as network_module
from nodes import runtime as runtime_module
from nodes.actor import Actor, UnhandledMessage, send_python
from nodes.network import count_types_python
from nodes.runtime import deliver_python
from overlay import cyclon as cyclon_module
from overlay import gradient as gradient_module
from protocols.messages import handles, message

engine = pytest.importorskip("nodes._engine", reason="the optional C extension was not built")


@message
class Hop:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


@message
class Skip:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


@message
class Stray:
    tag: int
    WIRE: ClassVar[tuple[int, int]] = (1, 0)


class Recorder(Actor):
    """Logs every message it handles and answers some, as a node would."""

    __slots__ = ("log",)

    def __init__(self, actor_id: int, log: list[tuple[int, str, int]]) -> None:
        super().__init__(actor_id)
        self.log = log

    @handles(Hop)
    def on_hop(self, msg: Hop, now: float) -> None:
        self.log.append((self.id, "hop", msg.tag))
        if msg.tag % 3 == 0:
            self.send(msg.tag % 5, Skip(msg.tag))

    @handles(Skip)
    def on_skip(self, msg: Skip, now: float) -> None:
        self.log.append((self.id, "skip", msg.tag))


class BatchRecorder(Recorder):
    """Treats its mailbox as one batch (the runtime must call its `drain`)."""

    __slots__ = ()

    def drain(self, messages: list[Any], now: float) -> None:
        self.log.append((self.id, "batch", len(messages)))


MESSAGE_TYPES = [Hop, Skip, Stray]
sends = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([Hop, Skip]), st.integers(0, 99)), max_size=60)


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(MESSAGE_TYPES), st.integers(0, 9)), max_size=80))
def test_count_types_agrees_with_its_python_reference(items: list[tuple[int, type, int]]) -> None:
    out = [(dst, kind(tag)) for dst, kind, tag in items]
    counted = engine.count_types(out)
    assert counted == count_types_python(out)
    assert list(counted) == list(count_types_python(out))  # types in the order of their first message


def _deliver(implementation: Any, items: list[tuple[int, type, int]], batch_actors: set[int],
             fixed: bool) -> tuple[list[Any], list[Any], list[int]]:
    log: list[tuple[int, str, int]] = []
    actors: list[Actor] = [(BatchRecorder if i in batch_actors else Recorder)(i, log) for i in range(5)]
    flushed: list[int] = []

    def flush(actor: Actor) -> None:
        flushed.append(actor.id)
        actor.outbox = []

    batch: list[Any] | None = [] if fixed else None
    implementation([(dst, kind(tag)) for dst, kind, tag in items], [[] for _ in actors], actors,
                   [i not in batch_actors for i in range(5)], 1.5, batch, flush)
    return log, batch if batch is not None else [], flushed


@given(sends, st.sets(st.integers(0, 4), max_size=2), st.booleans())
def test_deliver_agrees_with_its_python_reference(items: list[tuple[int, type, int]], batch_actors: set[int],
                                                  fixed: bool) -> None:
    assert _deliver(engine.deliver, items, batch_actors, fixed) == _deliver(deliver_python, items, batch_actors,
                                                                           fixed)


@pytest.mark.parametrize("implementation", [engine.deliver, deliver_python], ids=["C", "python"])
def test_a_message_without_a_handler_raises_unhandled_message(implementation: Any) -> None:
    with pytest.raises(UnhandledMessage, match="Recorder has no handler for Stray"):
        _deliver(implementation, [(1, Hop, 1), (1, Stray, 2)], set(), True)


def test_send_in_c_appends_exactly_what_send_in_python_does() -> None:
    compiled, python = Recorder(0, []), Recorder(0, [])
    for dst, msg in [(3, Hop(1)), (0, Skip(2)), (3, Hop(1))]:
        Actor.send(compiled, dst, msg)
        send_python(python, dst, msg)
    assert compiled.outbox == python.outbox
    with pytest.raises(TypeError, match="takes 2 arguments"):
        compiled.send(1)  # type: ignore[call-arg]


FAULTS = str(Path(__file__).resolve().parents[1] / "configs" / "faults" / "check-faults.toml")


@pytest.mark.parametrize("protocol, extra", [
    ("drf", {}), ("probe", {"latency": "uniform:1ms:3ms"}), ("pdgdrf", {}), ("dgdrf", {}),
    ("pdgdrf", {"faults": FAULTS, "max_time": "300s"}),  # loss, crashes and restarts, churn
])
def test_a_run_with_every_python_reference_has_the_same_events(protocol: str, extra: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    params = canonical_params({"protocol": protocol, "machines": 12, "users": 4, "neighbors": 2, **extra})
    compiled = traced_run(params)
    monkeypatch.setattr(runtime_module, "deliver", deliver_python)
    monkeypatch.setattr(network_module, "count_types", count_types_python)
    monkeypatch.setattr(actor_module.Actor, "send", send_python)
    monkeypatch.setattr(cyclon_module, "merge", cyclon_module.merge_python)
    monkeypatch.setattr(cyclon_module, "sample", cyclon_module.sample_python)
    monkeypatch.setattr(gradient_module, "rank", gradient_module.rank_python)
    python = traced_run(params)
    assert python["events"] == compiled["events"] > 1000
    assert python["hashes"] == compiled["hashes"] and python["result"] == compiled["result"]
